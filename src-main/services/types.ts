import type { Placement } from '../contract/placements'
import type { SshTarget } from '../ssh/pool'

/** Where a service (always-on or custom) runs and how to reach it. */
export interface ServiceLocation {
  readonly name: string
  readonly ssh: SshTarget
  readonly container: string
  /** Its HTTP base (http://host:port), or null when it has none. */
  readonly baseUrl: string | null
}

/**
 * Container control as deep health and the speech patches need it: owned by the services manager,
 * which also keeps the restart counters and the state-change history.
 */
export interface ServiceControl {
  locate(name: string): ServiceLocation | null
  /** `docker restart` of the service's container over SSH; `reason` goes to the log and history. */
  restart(name: string, reason: string): Promise<void>
}

/**
 * The placements as the services see them (the models domain's, passed in by the composition): each
 * placement besides node1's is a service, `llm@<placement id>`, its engine the llm container on its head.
 */
export interface PlacementServices {
  /** Every placement (the one including node1 is the llm service and is left out of the placement rows). */
  all(): readonly Placement[]
  /** True while a placement job runs: no placement is restarted then. */
  busy(): boolean
  /** Re-places placement `id` (same model, same nodes, a placement job); its job id. */
  restart(id: string, reason: string): Promise<string>
}

export * from './deepHealthHook'
export * from './probeOutcome'
