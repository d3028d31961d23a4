import type { ModelDef, ModelTag, LoadedModel, RunMode } from '../contract/models'
import type { Knobs } from '../contract/schemas'
import type { z } from 'zod'
import type { CoreDeps } from '../platform/domainModule'
import type { ServiceDirectory } from '../services/serviceDirectory'
import type { NodesModule } from '../nodes/module'

/** What the models domain is built from. */
export interface ModelsDeps extends CoreDeps {
  readonly nodes: NodesModule
  readonly services: ServiceDirectory
}

/** One model of the effective catalog, as every part of the models domain sees it. */
export interface CatalogEntry {
  readonly def: ModelDef
  readonly tags: readonly z.infer<typeof ModelTag>[]
  /** Bundled entries cannot be deleted. */
  readonly bundled: boolean
  /** The knob values in force: the override's, else those seeded from the bundled args. */
  readonly effectiveKnobs: Knobs
  /** The engine args a launch passes: the entry's args with the knobs applied. */
  readonly launchArgs: readonly string[]
}

/** The catalog as the disk, download and swap parts read it. */
export interface CatalogReader {
  list(): readonly CatalogEntry[]
  /** The entry, or a 404 ApiError. */
  get(key: string): CatalogEntry
  /** Called after every catalog mutation (spec 1, 2.3 rule 3: the swap manager reloads). */
  onChange(listener: () => void): void
}

/** What the swap manager tells the rest of the domain (disk deletion refuses the loaded model). */
export interface SwapStatus {
  loaded(): z.infer<typeof LoadedModel> | null
  /** A swap is in flight. */
  busy(): boolean
}

export type { RunMode }
