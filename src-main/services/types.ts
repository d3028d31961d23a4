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

export * from './deepHealthHook'
export * from './probeOutcome'
