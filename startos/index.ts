/**
 * The StartOS package: what the packer bundles (`npm run startos:bundle` → javascript/index.js)
 * and what StartOS calls. Type-checked in `npm test` against @start9labs/start-sdk.
 */
import { buildManifest, type T } from '@start9labs/start-sdk'
import { actions } from './actions'
import { createBackup, restoreInit } from './backups'
import { setInterfaces } from './interfaces'
import { main } from './main'
import { manifest as sdkManifest } from './manifest'
import { sdk } from './sdk'
import { versionGraph } from './versions'

export const init = sdk.setupInit(restoreInit, versionGraph, setInterfaces, actions)
export const uninit = sdk.setupUninit(versionGraph)
export const manifest = buildManifest(versionGraph, sdkManifest)
export { actions, createBackup, main }

// The package exports exactly what StartOS expects of a service.
export const abi: T.ABI = { createBackup, main, init, uninit, manifest, actions }
