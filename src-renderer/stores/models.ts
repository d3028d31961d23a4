import { defineStore } from 'pinia'
import { computed, reactive, ref, type Ref } from 'vue'
import { useApi, type InputOf, type OutputOf } from '../api'
import { followJob, type FollowedJob } from './jobs'
import { pushEventFollower } from './pushEvents'
import { dismissedDownload, downloadOutcome, rememberDismissed, type DownloadOutcome } from './downloadResult'
import { measuredDeadline, serverOffset, swapEta, uptimeSeconds, type EtaDeadline } from './swapTiming'
import type { FitEstimate, RunMode } from '../../src-main/contract/models'
type SwapStateEvent = Extract<OutputOf<'streamEvents'>, { name: 'swap.state' }>['data']

export type { FollowedJob, DownloadOutcome }
export type Model = OutputOf<'listModels'>[number]
export type DiskStatus = OutputOf<'diskStatus'>
export type DiskRow = DiskStatus['models'][number]
export type SwapView = OutputOf<'swapState'>
export type Hardware = OutputOf<'getHardware'>
type Part = 'catalog' | 'disk' | 'swap' | 'hardware' | 'events'

const fitKey = (key: string, mode: RunMode): string => `${key}:${mode}`

/** Fit estimates per model and mode, kept until the catalog or knobs change. */
function useFits() {
  const fits = reactive<Record<string, FitEstimate | { error: string }>>({})

  /** The fit estimate of a model in a mode; kept until the catalog or knobs change. */
  async function loadFit(key: string, mode: RunMode, fresh = false): Promise<FitEstimate | { error: string }> {
    const k = fitKey(key, mode)
    const have = fits[k]
    if (have && !fresh) return have
    try {
      fits[k] = await useApi().call('modelFit', { key, mode })
    } catch (err) {
      fits[k] = { error: (err as Error).message }
    }
    return fits[k]!
  }

  function fitOf(key: string, mode: RunMode): FitEstimate | { error: string } | null {
    return fits[fitKey(key, mode)] ?? null
  }

  function forgetFits(key?: string): void {
    for (const k of Object.keys(fits)) if (key === undefined || k.startsWith(`${key}:`)) delete fits[k]
  }

  return { loadFit, fitOf, forgetFits }
}

/** The swap view after a `swap.state` event: the loaded model, and the swap until it is done. */
function swapAfter(prev: SwapView | null, d: SwapStateEvent, done: boolean): SwapView {
  const cur = prev ?? { loaded: null, job: null, swapping: null }
  const eta = cur.swapping?.key === d.key ? cur.swapping.eta_s : null
  return {
    ...cur,
    // The event names what is loaded now: null once the current engine is stopped.
    loaded: d.loaded,
    swapping: done
      ? null
      : { key: d.key, mode: d.mode, phase: d.phase, eta_s: eta, layout: cur.swapping?.layout ?? null },
  }
}

/** The swap view with a `job.update` of its job. */
function swapWithJob(
  view: SwapView,
  data: Extract<OutputOf<'streamEvents'>, { name: 'job.update' }>['data'],
): SwapView {
  const same = view.job?.id === data.id ? view.job : null
  return { ...view, job: { elapsed_s: 0, log: [], result: null, ...same, ...data } }
}

/** The clock the views count with: ticks each second, knows the server's offset from push events' stamps. */
const TICK_MS = 1000

/** Uptime and the swap's ETA, counted on the client clock against the server's. */
function useSwapClock(
  swap: Ref<SwapView | null>,
  catalog: { disk: Ref<ReadonlyMap<string, DiskRow>>; models: Ref<Model[]> },
  followedJobId: () => string | null,
) {
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
      weightsBytes: swapping ? weightsBytes(catalog.disk.value, catalog.models.value, swapping.key) : null,
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

/** The weights one copy of a model takes: measured on a node's disk, else the catalog's size. */
function weightsBytes(disk: ReadonlyMap<string, DiskRow>, models: readonly Model[], key: string): number | null {
  const onDisk = disk.get(key)?.nodes.find((n) => n.present && n.bytes !== null)?.bytes
  return onDisk ?? models.find((m) => m.key === key)?.size_bytes ?? null
}

/** What a `swap.state` event changes: the swap view, the last event, and which job is followed. */
function swapStateHandler(ctx: {
  swap: Ref<SwapView | null>
  lastSwap: Ref<SwapStateEvent | null>
  swapJob: Ref<FollowedJob | null>
  followSwapJob(id: string, phase: string): void
  loadSwap(): Promise<void>
  loadCatalog(): Promise<void>
}): (d: SwapStateEvent) => void {
  return (d) => {
    ctx.lastSwap.value = d
    const done = d.phase === 'ready' || d.phase === 'failed'
    ctx.swap.value = swapAfter(ctx.swap.value, d, done)
    // A swap started elsewhere (another window, an on-demand request): follow it and read its ETA.
    if (ctx.swapJob.value?.id !== d.job_id && !done) {
      ctx.followSwapJob(d.job_id, d.phase)
      void ctx.loadSwap()
    }
    if (done) void ctx.loadCatalog()
  }
}

type Jobs = ReturnType<typeof useFollowedJobs>

/** What the operator does to the catalog, swaps and downloads; each keeps the store's state current. */
function modelActions(
  models: Ref<Model[]>,
  forgetFits: (key?: string) => void,
  { loadDisk, loadSwap }: { loadDisk(): Promise<void>; loadSwap(): Promise<void> },
  { download, downloadRepo, followSwapJob, followDownload }: Jobs,
) {
  /** Replaces one entry in place after an edit; a new entry is appended. */
  function put(m: Model): Model {
    const i = models.value.findIndex((x) => x.key === m.key)
    if (i >= 0) models.value.splice(i, 1, m)
    else models.value.push(m)
    forgetFits(m.key)
    return m
  }
  const api = () => useApi()
  return {
    async addModel(def: InputOf<'addModel'>): Promise<Model> {
      return put(await api().call('addModel', def))
    },
    async importRecipe(name: string): Promise<Model> {
      return put(await api().call('importRecipe', { name }))
    },
    async setKnobs(key: string, knobs: InputOf<'setKnobs'>['knobs']): Promise<Model> {
      return put(await api().call('setKnobs', { key, knobs }))
    },
    async deleteModel(key: string): Promise<void> {
      await api().call('deleteModel', { key })
      models.value = models.value.filter((m) => m.key !== key)
      forgetFits(key)
    },
    async deleteWeights(key: string): Promise<OutputOf<'deleteWeights'>> {
      const out = await api().call('deleteWeights', { key })
      forgetFits(key)
      await loadDisk()
      return out
    },
    validate(key: string, mode: RunMode): Promise<OutputOf<'validateLaunch'>> {
      return api().call('validateLaunch', { key, mode })
    },
    async startSwap(key: string, mode: RunMode, confirmNoFit: boolean): Promise<string> {
      const { job_id } = await api().call('startSwap', { key, mode, confirm_no_fit: confirmNoFit })
      followSwapJob(job_id, 'validating')
      await loadSwap()
      return job_id
    },
    async startDownload(input: InputOf<'startDownload'>): Promise<string> {
      const { job_id } = await api().call('startDownload', input)
      downloadRepo.value = input.repo
      followDownload(job_id)
      return job_id
    },
    async cancelDownload(): Promise<void> {
      if (download.value) await api().call('cancelJob', { id: download.value.id })
    },
  }
}

/** Per-part read errors, joined into one line for the view. */
function usePartReads() {
  const problems = reactive<Record<Part, string | null>>({
    catalog: null,
    disk: null,
    swap: null,
    hardware: null,
    events: null,
  })
  const error = computed(() => {
    const parts = (Object.entries(problems) as [Part, string | null][]).filter(([, v]) => v !== null)
    return parts.length > 0 ? parts.map(([k, v]) => `${k}: ${v}`).join('; ') : null
  })
  /** Reads one part into `into`; its failure shows in `error` under the part's name until a read succeeds. */
  const reader =
    <T>(part: Part, read: () => Promise<T>, into: { value: T | null }) =>
    async (): Promise<void> => {
      try {
        into.value = await read()
        problems[part] = null
      } catch (err) {
        problems[part] = (err as Error).message
      }
    }
  return { problems, error, reader }
}

/** The swap and download the view follows through their jobs' own streams. */
function useFollowedJobs(after: {
  swapEnded(): void
  downloadSucceeded(): void
  swapEta(jobId: string, etaS: number | null): void
}) {
  const swapJob = ref<FollowedJob | null>(null)
  /** The latest `swap.state` event: its phase and detail (a rollback says so here). */
  const lastSwap = ref<SwapStateEvent | null>(null)
  const download = ref<FollowedJob | null>(null)
  const downloadRepo = ref<string | null>(null)
  /** The last finished download's result card, until the operator dismisses it. */
  const downloadDone = ref<DownloadOutcome | null>(null)
  const streams: Record<'swap' | 'download', (() => void) | null> = { swap: null, download: null }

  function followSwapJob(id: string, phase: string): void {
    streams.swap?.()
    const f = followJob('streamJob', id, phase, 'swap', (ev) => {
      if (ev.type === 'progress') after.swapEta(id, ev.progress.eta_s)
      if (ev.type === 'end') after.swapEnded()
    })
    swapJob.value = f.job
    streams.swap = f.stop
  }

  /** Reads a finished download's record (sizes and times) into its result card. */
  async function readOutcome(id: string): Promise<void> {
    try {
      downloadDone.value = downloadOutcome(await useApi().call('getJob', { id }))
    } catch {
      // The live record still shows how it ended; only the card's figures are missing.
    }
  }

  function followDownload(id: string): void {
    streams.download?.()
    downloadDone.value = null
    const f = followJob('streamDownload', id, 'Connecting', 'download', (ev) => {
      if (ev.type !== 'end') return
      void readOutcome(id)
      if (ev.state === 'succeeded') after.downloadSucceeded()
    })
    download.value = f.job
    streams.download = f.stop
  }

  /**
   * A download started elsewhere (another window, the API) is followed too; with none running, the
   * last finished one keeps its result card unless it was dismissed.
   */
  async function resumeDownload(): Promise<void> {
    if (download.value) return
    try {
      const jobs = await useApi().call('listJobs', { kind: 'download' })
      const running = jobs.find((j) => j.state === 'running')
      if (download.value) return
      if (running) {
        downloadRepo.value = null
        followDownload(running.id)
        return
      }
      const last = jobs.reduce<(typeof jobs)[number] | null>(
        (a, j) => (a === null || (j.finished_at ?? 0) > (a.finished_at ?? 0) ? j : a),
        null,
      )
      if (last && last.id !== dismissedDownload()) downloadDone.value = downloadOutcome(last)
    } catch {
      // The panel still starts downloads; a running one shows once its 409 names it.
    }
  }

  /** Hides a finished download's result card, for good (a reload does not bring it back). */
  function dismissDownload(): void {
    const id = downloadDone.value?.id ?? download.value?.id
    if (id !== undefined) rememberDismissed(id)
    streams.download?.()
    streams.download = null
    download.value = null
    downloadRepo.value = null
    downloadDone.value = null
  }

  /** Hides a finished swap's progress box. */
  function dismissSwap(): void {
    streams.swap?.()
    streams.swap = null
    swapJob.value = null
    lastSwap.value = null
  }

  function stopStreams(): void {
    for (const k of ['swap', 'download'] as const) {
      streams[k]?.()
      streams[k] = null
    }
  }

  return {
    swapJob,
    lastSwap,
    download,
    downloadRepo,
    downloadDone,
    followSwapJob,
    followDownload,
    resumeDownload,
    dismissDownload,
    dismissSwap,
    stopStreams,
  }
}

/**
 * The Models view's state: the catalog, weights on disk, the loaded model and any swap, read once
 * and then kept current by push events (`swap.state`, `job.update`, hardware snapshots); a swap's
 * and a download's log arrive through the job's own stream.
 */
export const useModelsStore = defineStore('models', () => {
  const models = ref<Model[]>([])
  const loadedOnce = ref(false)
  const disk = ref<DiskStatus | null>(null)
  const swap = ref<SwapView | null>(null)
  const hardware = ref<Hardware | null>(null)
  const { loadFit, fitOf, forgetFits } = useFits()
  const diskByKey = computed(() => new Map((disk.value?.models ?? []).map((m) => [m.key, m])))
  const clock = useSwapClock(swap, { disk: diskByKey, models }, () => jobs.swapJob.value?.id ?? null)
  const jobs = useFollowedJobs({
    swapEnded: () => void Promise.all([loadCatalog(), loadSwap(), loadDisk()]),
    downloadSucceeded: () => void loadDisk(),
    swapEta: clock.sawEta,
  })
  const { swapJob, lastSwap, followSwapJob } = jobs
  const { problems, error, reader } = usePartReads()
  /** The catalog key of the loaded model: the swap state says, not the catalog's last read. */
  const loadedKey = computed(() => swap.value?.loaded?.key ?? null)

  const readCatalog = reader('catalog', () => useApi().call('listModels', {}), models)
  async function loadCatalog(): Promise<void> {
    await readCatalog()
    loadedOnce.value = true
  }
  const loadDisk = reader('disk', () => useApi().call('diskStatus', {}), disk)
  const readSwap = reader('swap', () => useApi().call('swapState', {}), swap)
  async function loadSwap(): Promise<void> {
    await readSwap()
    const job = swap.value?.job
    if (!job || job.state !== 'running') return
    clock.sawEta(job.id, swap.value?.swapping?.eta_s)
    if (swapJob.value?.id !== job.id) followSwapJob(job.id, job.phase)
  }
  const loadHardware = reader('hardware', () => useApi().call('getHardware', {}), hardware)

  /** Reads everything (at mount, on focus, after a resync): a reload shows what was there before it. */
  async function refresh(): Promise<void> {
    await Promise.all([loadCatalog(), loadDisk(), loadSwap(), loadHardware(), jobs.resumeDownload()])
  }

  const onSwapState = swapStateHandler({ swap, lastSwap, swapJob, followSwapJob, loadSwap, loadCatalog })

  function apply(ev: OutputOf<'streamEvents'>): void {
    clock.sawServerTime(ev.at)
    switch (ev.name) {
      case 'swap.state':
        onSwapState(ev.data)
        break
      case 'job.update':
        if (ev.data.kind !== 'swap' || !swap.value) break
        swap.value = swapWithJob(swap.value, ev.data)
        if (ev.data.state === 'running') clock.sawEta(ev.data.id, ev.data.progress?.eta_s)
        break
      case 'hardware.snapshot':
        hardware.value = ev.data
        break
      case 'resync':
        void refresh()
        break
      default:
        break
    }
  }

  const pushEvents = pushEventFollower(apply, (problem) => (problems.events = problem))

  function follow(): void {
    pushEvents.follow()
    clock.start()
  }

  function unfollow(): void {
    pushEvents.unfollow()
    jobs.stopStreams()
    clock.stop()
  }

  return {
    models,
    loadedOnce,
    disk,
    diskByKey,
    swap,
    loadedKey,
    hardware,
    swapJob,
    lastSwap,
    download: jobs.download,
    downloadRepo: jobs.downloadRepo,
    downloadDone: jobs.downloadDone,
    now: clock.now,
    uptimeS: clock.uptimeS,
    swapEta: clock.eta,
    error,
    refresh,
    loadCatalog,
    loadDisk,
    loadFit,
    fitOf,
    follow,
    unfollow,
    resumeDownload: jobs.resumeDownload,
    dismissSwap: jobs.dismissSwap,
    dismissDownload: jobs.dismissDownload,
    ...modelActions(models, forgetFits, { loadDisk, loadSwap }, jobs),
  }
})
