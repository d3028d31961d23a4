import type { DeepHealthVerdict, ServiceStatus } from '../contract/nodes'
import type { DeepHealthResult } from '../contract/services'
import type { ContainerInfo } from './containers'
import type { HttpHealth } from './healthCheck'

/** A container that started this recently and does not answer yet is Starting, not Unhealthy. */
export const STARTING_GRACE_MS = 10 * 60 * 1000

export type LabelParts = Pick<ServiceStatus, 'label' | 'label_reason' | 'actions_blocked'>
export type LatestProbe = Pick<DeepHealthResult, 'ok' | 'wedged' | 'at' | 'error'>

/**
 * The label of a service whose node is unreachable: Unknown, whatever its HTTP check says (that may
 * be a stale route or another host), with its actions refused and the reason why.
 */
export function unreachableLabel(node: string, error: string | null): LabelParts {
  return {
    label: 'Unknown',
    label_reason: 'node unreachable',
    actions_blocked: `${node} is unreachable over SSH${error ? ` (${error})` : ''}: its container cannot be read, started or stopped until it answers`,
  }
}

/**
 * The label rules (spec 1, 4.1), in order:
 * - Healthy: the health check answers OK (the container state is then secondary);
 * - Stopped: the container exists but is not running (exited, created, paused, dead);
 * - Starting: the container is restarting, or started less than STARTING_GRACE_MS ago and does not
 *   answer yet;
 * - Unhealthy: everything else, including a service that answers with an error (HTTP 500 is a fault,
 *   not a start-up), a missing container and an unreadable one.
 * Not configured is decided before any check (no node or no usable address), and Unknown after it
 * when the node does not answer over SSH (unreachableLabel).
 */
export function serviceLabel(
  container: Pick<ContainerInfo, 'state' | 'started_at'>,
  http: Pick<HttpHealth, 'ok' | 'answered'>,
  now: number,
): Exclude<ServiceStatus['label'], 'Not configured'> {
  if (http.ok) return 'Healthy'
  if (['exited', 'created', 'paused', 'dead'].includes(container.state)) return 'Stopped'
  if (http.answered) return 'Unhealthy'
  if (container.state === 'restarting') return 'Starting'
  const startedMs = container.started_at ? Date.parse(container.started_at) : NaN
  const recentlyStarted = Number.isFinite(startedMs) && now - startedMs < STARTING_GRACE_MS
  return container.state === 'running' && recentlyStarted ? 'Starting' : 'Unhealthy'
}

/** The label by the container and /health alone: Unknown on an unreachable node (named `node`), else the rules above. */
export function labelByHealth(node: string, container: ContainerInfo, http: HttpHealth, now: number): LabelParts {
  if (container.unreachable) return unreachableLabel(node, container.error)
  return { label: serviceLabel(container, http, now), label_reason: null, actions_blocked: null }
}

/**
 * The card and the deep-health row agree (issue 31). A /health that answers OK says the process is
 * up, not that it works: a failed deep-health probe that began after the service last came up (its
 * /health turned OK, or a new container start was seen) is newer evidence, so Healthy reads
 * "Unhealthy (deep health: wedged)" until a later probe passes. A failed probe from before the
 * service came up again is stale: the label follows /health and deep health probes again at once.
 * Other labels (Stopped, Starting, Unknown, Unhealthy by /health) already say more than the probe.
 */
export function deepHealthVerdict(latest: LatestProbe | null, upSince: number | null): DeepHealthVerdict | null {
  if (latest === null) return null
  return { ok: latest.ok, wedged: latest.wedged, at: latest.at, stale: upSince !== null && latest.at <= upSince }
}

/** The label a deep-health verdict makes of `base` (see deepHealthVerdict). */
export function withDeepHealth(base: LabelParts, verdict: DeepHealthVerdict | null): LabelParts {
  if (base.label !== 'Healthy' || verdict === null || verdict.ok || verdict.stale) return base
  return {
    label: 'Unhealthy',
    label_reason: `deep health: ${verdict.wedged ? 'wedged' : 'failing'}`,
    actions_blocked: null,
  }
}
