import { defineStore } from 'pinia'
import { computed, reactive, ref, type Ref } from 'vue'
import { useApi, type InputOf, type OutputOf } from '../api'
import { followJob, type FollowedJob } from './jobs'
import { pushEventFollower } from './pushEvents'
import { usePartReads } from './partReads'
import {
  dismissedDownload,
  downloadOutcome,
  downloadRepoOf,
  rememberDismissed,
  type DownloadOutcome,
} from './downloadResult'
import type { FitEstimate, RunMode } from '../../src-main/contract/models'

export type { FollowedJob, DownloadOutcome }
export type Model = OutputOf<'listModels'>[number]
export type DiskStatus = OutputOf<'diskStatus'>
export type DiskRow = DiskStatus['models'][number]
export type Hardware = OutputOf<'getHardware'>

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

type Jobs = ReturnType<typeof useFollowedJobs>

/** What the operator does to the catalog and downloads; each keeps the store's state current. */
function modelActions(
  models: Ref<Model[]>,
  forgetFits: (key?: string) => void,
  loadDisk: () => Promise<void>,
  { download, downloadRepo, followDownload }: Jobs,
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

/** The download the view follows through its job's own stream. */
function useFollowedJobs(after: { downloadSucceeded(): void }) {
  const download = ref<FollowedJob | null>(null)
  const downloadRepo = ref<string | null>(null)
  /** The last finished download's result card, until the operator dismisses it. */
  const downloadDone = ref<DownloadOutcome | null>(null)
  const streams: Record<'download', (() => void) | null> = { download: null }

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
        // Its title names the repo: the card it was started from shows its progress again.
        downloadRepo.value = downloadRepoOf(running)
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

  function stopStreams(): void {
    streams.download?.()
    streams.download = null
  }

  return {
    download,
    downloadRepo,
    downloadDone,
    followDownload,
    resumeDownload,
    dismissDownload,
    stopStreams,
  }
}

/**
 * The catalog and what belongs to its models: entries and knobs, fit estimates per mode, weights on
 * disk, live hardware (the knobs' GB), and downloads. Read once, then kept current by push events
 * (hardware snapshots, resync); a download's log arrives through its job's own stream. What runs
 * where, the swap on node1 included, is the placements store's.
 */
export const useCatalogStore = defineStore('catalog', () => {
  const models = ref<Model[]>([])
  const loadedOnce = ref(false)
  const disk = ref<DiskStatus | null>(null)
  const hardware = ref<Hardware | null>(null)
  const { loadFit, fitOf, forgetFits } = useFits()
  const diskByKey = computed(() => new Map((disk.value?.models ?? []).map((m) => [m.key, m])))
  const jobs = useFollowedJobs({ downloadSucceeded: () => void loadDisk() })
  const { error, reader } = usePartReads(['catalog', 'disk', 'hardware'])

  const readCatalog = reader('catalog', () => useApi().call('listModels', {}), models)
  async function loadCatalog(): Promise<void> {
    await readCatalog()
    loadedOnce.value = true
  }
  const loadDisk = reader('disk', () => useApi().call('diskStatus', {}), disk)
  const loadHardware = reader('hardware', () => useApi().call('getHardware', {}), hardware)

  /** The weights one copy of a model takes: measured on a node's disk, else the catalog's size. */
  function weightsBytes(key: string): number | null {
    const onDisk = diskByKey.value.get(key)?.nodes.find((n) => n.present && n.bytes !== null)?.bytes
    return onDisk ?? models.value.find((m) => m.key === key)?.size_bytes ?? null
  }

  /** Reads everything (at mount, on focus, after a resync): a reload shows what was there before it. */
  async function refresh(): Promise<void> {
    await Promise.all([loadCatalog(), loadDisk(), loadHardware(), jobs.resumeDownload()])
  }

  /** The catalog's push events: live hardware, and a resync that reads everything again. */
  function apply(ev: OutputOf<'streamEvents'>): void {
    if (ev.name === 'hardware.snapshot') hardware.value = ev.data
    else if (ev.name === 'resync') void refresh()
  }

  // The stores share one event stream: the placements store, followed beside this one, reports its stops.
  const pushEvents = pushEventFollower(apply, () => undefined)

  function unfollow(): void {
    pushEvents.unfollow()
    jobs.stopStreams()
  }

  return {
    models,
    loadedOnce,
    disk,
    diskByKey,
    hardware,
    download: jobs.download,
    downloadRepo: jobs.downloadRepo,
    downloadDone: jobs.downloadDone,
    error,
    refresh,
    loadCatalog,
    loadDisk,
    loadFit,
    fitOf,
    weightsBytes,
    follow: pushEvents.follow,
    unfollow,
    resumeDownload: jobs.resumeDownload,
    dismissDownload: jobs.dismissDownload,
    ...modelActions(models, forgetFits, loadDisk, jobs),
  }
})
