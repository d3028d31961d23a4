import type { SwapPhase } from '../../src-main/contract/models'

/**
 * Bytes per second a node reads weights at while vLLM loads them, for the ETA of a model's first
 * load (later loads count down from the time the daemon measured). The DGX Spark's NVMe drive reads
 * sequentially at several GB/s; safetensors loading, with its parsing and copies into GPU memory,
 * lands well below that, so 2 GB/s is a deliberately rough figure and is labelled an estimate.
 */
export const WEIGHTS_READ_BYTES_PER_S = 2e9

/**
 * The server clock minus the client clock, from an event stamped `at` (server ms) seen at `clientNow`.
 * Delivery only delays an event, so the largest observation is the closest one; a replayed old event
 * cannot pull the offset back.
 */
export function serverOffset(prev: number | null, at: number, clientNow: number): number {
  const seen = at - clientNow
  return prev === null ? seen : Math.max(prev, seen)
}

/** Whole seconds since `since` (server ms); never negative, whatever the two clocks say. */
export function uptimeSeconds(since: number | null, clientNow: number, offsetMs: number | null): number | null {
  if (since === null) return null
  return Math.max(0, Math.floor((clientNow + (offsetMs ?? 0) - since) / 1000))
}

/** When a swap's load is expected to end, in client ms, and whether that is a measured time or an estimate. */
export interface EtaDeadline {
  readonly jobId: string
  readonly at: number
  readonly estimate: boolean
}

/** The daemon's ETA (seconds from its last measured load) seen at `clientNow`. */
export function measuredDeadline(jobId: string, etaS: number, clientNow: number): EtaDeadline {
  return { jobId, at: clientNow + etaS * 1000, estimate: false }
}

/**
 * A first load's ETA: the weights each node reads (split by tensor parallelism) at
 * WEIGHTS_READ_BYTES_PER_S, counted from the job's start (server ms, so a reload keeps it).
 */
export function estimatedDeadline(
  jobId: string,
  startedAt: number,
  offsetMs: number | null,
  weightsBytes: number,
  tensorParallel: number,
): EtaDeadline {
  const perNode = weightsBytes / Math.max(1, tensorParallel)
  const startClient = startedAt - (offsetMs ?? 0)
  return { jobId, at: startClient + (perNode / WEIGHTS_READ_BYTES_PER_S) * 1000, estimate: true }
}

/** Seconds left until `deadline`, counting down with the clock; 0 once it has passed. */
export function secondsLeft(deadline: EtaDeadline, clientNow: number): number {
  return Math.max(0, Math.ceil((deadline.at - clientNow) / 1000))
}

/** The phases a swap goes through on success, in order. */
export const SWAP_STEPS = ['validating', 'stopping', 'launching', 'loading', 'ready'] as const

/**
 * The step a failed swap was in when it failed: the last step in its job's phase history (titles, as
 * the job registry records them) before it turned to rolling back or failed.
 */
export function failedStep(
  history: readonly string[],
  titles: Readonly<Record<SwapPhase, string>>,
): (typeof SWAP_STEPS)[number] | null {
  const byTitle = new Map<string, SwapPhase>(Object.entries(titles).map(([k, t]) => [t, k as SwapPhase]))
  const phases = history.map((t) => byTitle.get(t) ?? null)
  const end = phases.findIndex((p) => p === 'failed' || p === 'rolling_back')
  if (end < 0) return null
  for (let i = end - 1; i >= 0; i--) {
    const p = phases[i]
    if (p !== null && p !== undefined && p !== 'ready' && (SWAP_STEPS as readonly string[]).includes(p))
      return p as (typeof SWAP_STEPS)[number]
  }
  return null
}

/** What the ETA of a swap is read from. */
export interface EtaInputs {
  /** The swap in progress, if any. */
  swapping: { key: string; layout: { tensor_parallel: number } | null } | null
  /** The swap's job record while it runs (its start time anchors an estimate). */
  job: { id: string; started_at: number } | null
  /** The job the view follows when the record has not arrived yet. */
  followedJobId: string | null
  deadline: EtaDeadline | null
  weightsBytes: number | null
  offsetMs: number | null
  clientNow: number
}

/**
 * The ETA of the swap in progress: the daemon's measured one for its job when there is one, else an
 * estimate from the weights' size; null when there is no swap or nothing to go on.
 */
export function swapEta(i: EtaInputs): { seconds: number; estimate: boolean } | null {
  if (i.swapping === null) return null
  const id = i.job?.id ?? i.followedJobId
  let d = i.deadline !== null && i.deadline.jobId === id ? i.deadline : null
  if (d === null && i.job !== null && i.weightsBytes !== null)
    d = estimatedDeadline(
      i.job.id,
      i.job.started_at,
      i.offsetMs,
      i.weightsBytes,
      i.swapping.layout?.tensor_parallel ?? 1,
    )
  return d === null ? null : { seconds: secondsLeft(d, i.clientNow), estimate: d.estimate }
}
