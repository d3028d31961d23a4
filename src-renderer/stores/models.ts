import { defineStore } from 'pinia'
import { computed, reactive, ref, type Ref } from 'vue'
import { useApi, type InputOf, type OutputOf } from '../api'
import { followJob, type FollowedJob } from './jobs'
import { pushEventFollower } from './pushEvents'
import type { FitEstimate, RunMode } from '../../src-main/contract/models'
type SwapStateEvent = Extract<OutputOf<'streamEvents'>, { name: 'swap.state' }>['data']

export type { FollowedJob }
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
    loaded: d.loaded ?? cur.loaded,
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
  return { ...view, job: { elapsed_s: 0, log: [], result: null, ...view.job, ...data } }
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
function useFollowedJobs(after: { swapEnded(): void; downloadSucceeded(): void }) {
  const swapJob = ref<FollowedJob | null>(null)
  /** The latest `swap.state` event: its phase and detail (a rollback says so here). */
  const lastSwap = ref<SwapStateEvent | null>(null)
  const download = ref<FollowedJob | null>(null)
  const downloadRepo = ref<string | null>(null)
  const streams: Record<'swap' | 'download', (() => void) | null> = { swap: null, download: null }

  function followSwapJob(id: string, phase: string): void {
    streams.swap?.()
    const f = followJob('streamJob', id, phase, 'swap', (ev) => {
      if (ev.type === 'end') after.swapEnded()
    })
    swapJob.value = f.job
    streams.swap = f.stop
  }

  function followDownload(id: string): void {
    streams.download?.()
    const f = followJob('streamDownload', id, 'Connecting', 'download', (ev) => {
      if (ev.type === 'end' && ev.state === 'succeeded') after.downloadSucceeded()
    })
    download.value = f.job
    streams.download = f.stop
  }

  /** A download started elsewhere (another window, the API) is followed too. */
  async function resumeDownload(): Promise<void> {
    if (download.value) return
    try {
      const running = (await useApi().call('listJobs', { kind: 'download' })).find((j) => j.state === 'running')
      if (running && !download.value) {
        downloadRepo.value = null
        followDownload(running.id)
      }
    } catch {
      // The panel still starts downloads; a running one shows once its 409 names it.
    }
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
    followSwapJob,
    followDownload,
    resumeDownload,
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
  const jobs = useFollowedJobs({
    swapEnded: () => void Promise.all([loadCatalog(), loadSwap(), loadDisk()]),
    downloadSucceeded: () => void loadDisk(),
  })
  const { swapJob, lastSwap, download, downloadRepo, followSwapJob } = jobs
  const { problems, error, reader } = usePartReads()
  const diskByKey = computed(() => new Map((disk.value?.models ?? []).map((m) => [m.key, m])))

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
    if (job && job.state === 'running' && swapJob.value?.id !== job.id) followSwapJob(job.id, job.phase)
  }
  const loadHardware = reader('hardware', () => useApi().call('getHardware', {}), hardware)

  /** Reads everything once (at mount, on focus, after a resync). */
  async function refresh(): Promise<void> {
    await Promise.all([loadCatalog(), loadDisk(), loadSwap(), loadHardware()])
  }

  function onSwapState(d: SwapStateEvent): void {
    lastSwap.value = d
    const done = d.phase === 'ready' || d.phase === 'failed'
    swap.value = swapAfter(swap.value, d, done)
    // A swap started elsewhere (another window, an on-demand request): follow it and read its ETA.
    if (swapJob.value?.id !== d.job_id && !done) {
      followSwapJob(d.job_id, d.phase)
      void loadSwap()
    }
    if (done) void loadCatalog()
  }

  function apply(ev: OutputOf<'streamEvents'>): void {
    switch (ev.name) {
      case 'swap.state':
        onSwapState(ev.data)
        break
      case 'job.update':
        if (ev.data.kind === 'swap' && swap.value) swap.value = swapWithJob(swap.value, ev.data)
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

  function unfollow(): void {
    pushEvents.unfollow()
    jobs.stopStreams()
  }

  return {
    models,
    loadedOnce,
    disk,
    diskByKey,
    swap,
    hardware,
    swapJob,
    lastSwap,
    download,
    downloadRepo,
    error,
    refresh,
    loadCatalog,
    loadDisk,
    loadFit,
    fitOf,
    follow: pushEvents.follow,
    unfollow,
    resumeDownload: jobs.resumeDownload,
    dismissSwap: jobs.dismissSwap,
    ...modelActions(models, forgetFits, { loadDisk, loadSwap }, jobs),
  }
})
