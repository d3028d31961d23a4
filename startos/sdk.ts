import { StartSdk } from '@start9labs/start-sdk'
import { manifest } from './manifest'

/** The SDK bound to Tandem's manifest: every other file in startos/ builds on this. */
export const sdk = StartSdk.of().withManifest(manifest).build(true)
