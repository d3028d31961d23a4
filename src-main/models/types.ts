import type { ModelDef, ModelTag, LoadedModel, RunMode } from '../contract/models'
import type { Knobs } from '../contract/schemas'
import type { z } from 'zod'
import type { CoreDeps } from '../platform/domainModule'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import type { NodesModule } from '../nodes/module'

/** What the models domain is built from. */
export interface ModelsDeps extends CoreDeps {
  readonly nodes: NodesModule
  readonly services: ServiceDirectory
  /** Whether a placement has a request in flight (the gateway's count, wired by the composition): not unloaded then. */
  readonly isBusy?: (placementId: string) => boolean
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
  /** The operator's knob override alone (a recipe launch passes it to the launcher's runner). */
  readonly knobs?: Knobs
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
  /** The ids of the placements serving a catalog model. */
  placementsOf?(key: string): string[]
}

export type { RunMode }

/** Where the gateway sends a request for a model: the placement serving it and its engine's origin. */
export interface PlacementRoute {
  /** The placement's id (`node1`, `node3+node4`): the `placement` label of usage and metrics. */
  readonly id: string
  /** The engine's origin on the placement's head, e.g. `http://10.0.0.3:8888`. */
  readonly baseUrl: string
  /** The name the engine serves (its /v1/models id). */
  readonly served: string
  /** The catalog key, or null when the running model matches no entry. */
  readonly key: string | null
  /** Every id the engine lists in its /v1/models (aliases, LoRA adapters); absent when not known. */
  readonly names?: readonly string[]
}

/**
 * The gateway's view of the placements (docs/placements.md, Routing): which placement serves a
 * request's `model`, and the hold while a placement job touches it.
 */
export interface ModelRouter {
  /**
   * Resolves when the request may go on, with where it may go: the copies of the model whose
   * engines answer (one at least; the gateway picks the least busy). A placement serves `model`
   * when its engine lists that id or it is the placement's catalog key; any other model, and none,
   * goes to node1's llm (the default route: its engine answers for itself). Holds while a placement
   * job loads that model or displaces its placement (up to SWAP_HOLD_S, then 503 with Retry-After);
   * starts a placement on demand when SWAP_ON_DEMAND is on and the model fits. Throws 503 naming the
   * settings when node1 is not configured, 503 with Retry-After when no copy of a placed model
   * answers (node1's is tried anyway), and rejects with the signal's reason when the client goes away.
   */
  admit(model: string | null, signal: AbortSignal): Promise<readonly PlacementRoute[]>
  /** The routes at once when `admit` would resolve without waiting, looking again or starting anything, else null. */
  routeNow(model: string | null): readonly PlacementRoute[] | null
  /** Every placement whose engine answers (what `/v1/models` lists). */
  placed(): readonly PlacementRoute[]
  /** A relayed request failed on a route's engine: what the engines serve is looked at again now. */
  relook?(routeId: string): void
}

/** A size as the download tools print it ("12.3GB"): prebuilt installs read theirs the same way. */
export { parseSize } from './progress'
export type { LauncherProbe } from './launcherCapabilities'
