import { IMPOSSIBLE, VersionGraph, VersionInfo } from '@start9labs/start-sdk'
import { VERSION } from '../src-main/lib/version'

/**
 * The package version is Tandem's own `x.y.z:r` (one source: src-main/lib/version.ts). The daemon
 * migrates its own data on start (numbered SQLite migrations, versioned state files), so moving up
 * needs no package-level step; moving down is refused because an older Tandem cannot read a newer
 * licensing database.
 */
export const current = VersionInfo.of({
  version: VERSION,
  releaseNotes: `Tandem ${VERSION}`,
  migrations: {
    up: async () => {},
    down: IMPOSSIBLE,
  },
})

export const versionGraph = VersionGraph.of({ current, other: [] })
