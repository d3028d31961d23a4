import { computed, ref, type Ref } from 'vue'
import { useApi, type OutputOf } from '../api'
import { followJob, type FollowedJob } from './jobs'
import { measuredDeadline, serverOffset, swapEta, uptimeSeconds, type EtaDeadline } from './swapTiming'
import type { RunMode } from '../../src-main/contract/models'

/**
 * The placement on node1 as the spec's swap endpoints tell it (GET /api/swap, POST /api/swap/{key}):
 * the model loaded in the llm, the swap in progress with its ETA, and the swap job followed through
 * its own stream. A swap is the placement job on node1; the placements store holds this beside the
 * placements view.
 */
export type SwapView = OutputOf<'swapState'>
/** A placement job's step: the `step` of `placements.changed`. */
export type SwapStateEvent = NonNullable<
  Extract<OutputOf<'streamEvents'>, { name: 'placements.changed' }>['data']['step']
>
type JobUpdate = Extract<OutputOf<'streamEvents'>, { name: 'job.update' }>['data']

/** What the ETA of a first load is estimated from: the weights of a catalog model. */
export type WeightsOf = (key: string) => number | null

/** The swap view after a swap step: the loaded model, and the swap until it is done. */
function swapAfter(prev: SwapView | null, d: SwapStateEvent, done: boolean): SwapView {
  const cur = prev ?? { loaded: null, job: null, swapping: null }
  const eta = cur.swapping?.key === d.key ? cur.swapping.eta_s : null
  return {
    ...cur,
    // The step names what is loaded now: null once the current engine is stopped.
    loaded: d.loaded,
    swapping: done
      ? null
      : { key: d.key, mode: d.mode, phase: d.phase, eta_s: eta, layout: cur.swapping?.layout ?? null },
  }
}

/** The swap view with a `job.update` of its job. */
function swapWithJob(view: SwapView, data: JobUpdate): SwapView {
  const same = view.job?.id === data.id ? view.job : null
  return { ...view, job: { elapsed_s: 0, log: [], result: null, ...same, ...data } }
}

/** The clock the views count with: ticks each second, knows the server's offset from push events' stamps. */
const TICK_MS = 1000

/** Uptime and the swap's ETA, counted on the client clock against the server's. */
function useSwapClock(swap: Ref<SwapView | null>, weightsOf: WeightsOf, followedJobId: () => string | null) {
  const now = ref(Date.now())
  const offsetMs = ref<number | null>(null)
  const deadline = ref<EtaDeadline | null>(null)
  let timer: ReturnType<typeof setInterval> | null = null

  const uptimeS = computed(() => uptimeSeconds(swap.value?.loaded?.since ?? null, now.value, offsetMs.value))
  const eta = computed(() => {
    const swapping = swap.value?.swapping ?? null
    const job = swap.value?.job?.state === 'running' ? swap.value.job : null
    return swapEta({
      swapping,
      job,
      followedJobId: followedJobId(),
      deadline: deadline.value,
      weightsBytes: swapping ? weightsOf(swapping.key) : null,
      offsetMs: offsetMs.value,
      clientNow: now.value,
    })
  })

  return {
    now,
    uptimeS,
    eta,
    /** An event stamped `at` by the server arrived now. */
    sawServerTime(at: number): void {
      offsetMs.value = serverOffset(offsetMs.value, at, Date.now())
    },
    /** The daemon said how many seconds the swap job `jobId` has left. */
    sawEta(jobId: string, etaS: number | null | undefined): void {
      if (etaS !== null && etaS !== undefined) deadline.value = measuredDeadline(jobId, etaS, Date.now())
    },
    start(): void {
      timer ??= setInterval(() => (now.value = Date.now()), TICK_MS)
    },
    stop(): void {
      if (timer !== null) clearInterval(timer)
      timer = null
    },
  }
}

/**
 * The swap on node1: its view, the followed job, the clock. `jobEnded` runs when a swap's job ends
 * (the catalog and the disk change with it), `loadedChanged` when a step says the swap is done;
 * `report` takes a read's problem (null once a read succeeds).
 */
export function useSwapOnNode1(deps: {
  weightsOf: WeightsOf
  jobEnded(): void
  loadedChanged(): void
  report(problem: string | null): void
}) {
  const swap = ref<SwapView | null>(null)
  const swapJob = ref<FollowedJob | null>(null)
  /** The latest swap step: its phase and detail (a rollback says so here). */
  const lastSwap = ref<SwapStateEvent | null>(null)
  let stopStream: (() => void) | null = null
  const clock = useSwapClock(swap, deps.weightsOf, () => swapJob.value?.id ?? null)
  /** The catalog key of the loaded model: the swap state says, not the catalog's last read. */
  const loadedKey = computed(() => swap.value?.loaded?.key ?? null)

  function followSwapJob(id: string, phase: string): void {
    stopStream?.()
    const f = followJob('streamJob', id, phase, 'swap', (ev) => {
      if (ev.type === 'progress') clock.sawEta(id, ev.progress.eta_s)
      if (ev.type === 'end') {
        void loadSwap()
        deps.jobEnded()
      }
    })
    swapJob.value = f.job
    stopStream = f.stop
  }

  async function loadSwap(): Promise<void> {
    try {
      swap.value = await useApi().call('swapState', {})
      deps.report(null)
    } catch (err) {
      deps.report((err as Error).message)
      return
    }
    const job = swap.value?.job
    if (!job || job.state !== 'running') return
    clock.sawEta(job.id, swap.value?.swapping?.eta_s)
    if (swapJob.value?.id !== job.id) followSwapJob(job.id, job.phase)
  }

  /** A swap step (the `step` of `placements.changed`): the view, the last step, and which job is followed. */
  function sawStep(d: SwapStateEvent): void {
    lastSwap.value = d
    const done = d.phase === 'ready' || d.phase === 'failed'
    swap.value = swapAfter(swap.value, d, done)
    // A swap started elsewhere (another window, an on-demand request): follow it and read its ETA.
    if (swapJob.value?.id !== d.job_id && !done) {
      followSwapJob(d.job_id, d.phase)
      void loadSwap()
    }
    if (done) deps.loadedChanged()
  }

  /** A `job.update` of the swap job. */
  function sawJob(data: JobUpdate): void {
    if (data.kind !== 'swap' || !swap.value) return
    swap.value = swapWithJob(swap.value, data)
    if (data.state === 'running') clock.sawEta(data.id, data.progress?.eta_s)
  }

  /** Swaps the model on node1 (POST /api/swap/{key}) and follows its job. */
  async function startSwap(key: string, mode: RunMode, confirmNoFit: boolean): Promise<string> {
    const { job_id } = await useApi().call('startSwap', { key, mode, confirm_no_fit: confirmNoFit })
    followSwapJob(job_id, 'validating')
    await loadSwap()
    return job_id
  }

  /** Follows a placement job the operator just started, before its first step arrives. */
  function followPlacementJob(id: string): void {
    if (swapJob.value?.id !== id) followSwapJob(id, 'validating')
  }

  /** Hides a finished swap's progress box. */
  function dismissSwap(): void {
    stopStream?.()
    stopStream = null
    swapJob.value = null
    lastSwap.value = null
  }

  function stopFollowing(): void {
    stopStream?.()
    stopStream = null
    clock.stop()
  }

  return {
    swap,
    swapJob,
    lastSwap,
    loadedKey,
    now: clock.now,
    uptimeS: clock.uptimeS,
    swapEta: clock.eta,
    sawServerTime: clock.sawServerTime,
    startClock: clock.start,
    loadSwap,
    sawStep,
    sawJob,
    startSwap,
    followPlacementJob,
    dismissSwap,
    stopFollowing,
  }
}
