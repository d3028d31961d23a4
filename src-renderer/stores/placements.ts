import { defineStore } from 'pinia'
import { computed, reactive, ref } from 'vue'
import { useApi, type OutputOf } from '../api'
import { pushEventFollower } from './pushEvents'
import { usePartReads } from './partReads'
import { useCatalogStore } from './catalog'
import { useSwapOnNode1 } from './swapOnNode1'
import type { FitEstimate, RunMode } from '../../src-main/contract/models'
import type { Placement, PlacementsView } from '../../src-main/contract/placements'

export type { Placement, PlacementsView }
export type { SwapView } from './swapOnNode1'
export type PlacementNode = PlacementsView['nodes'][number]
type JobUpdate = Extract<OutputOf<'streamEvents'>, { name: 'job.update' }>['data']

/** The view with a `job.update` of the placement job it shows (the log arrives through the job's own stream). */
export function viewWithJob(view: PlacementsView, data: JobUpdate): PlacementsView {
  const jobId = view.changing?.job_id ?? view.job?.id ?? null
  if (data.id !== jobId) return view
  const same = view.job?.id === data.id ? view.job : null
  return { ...view, job: { elapsed_s: 0, log: [], result: null, ...same, ...data } }
}

/** Why no placement may start or stop now, in the operator's words; null when one may. */
export function placementBusyReason(view: PlacementsView | null): string | null {
  const c = view?.changing ?? null
  if (c !== null) return `a placement job is running (${c.action === 'stop' ? 'stopping' : 'placing'} ${c.id})`
  return view?.job?.state === 'running' ? 'a placement job is running' : null
}

/** Fit estimates on chosen nodes, until the placements change (what is free changes with them). */
function useFitsOn() {
  const fits = reactive<Record<string, FitEstimate | { error: string }>>({})
  const fitKey = (key: string, on: readonly string[]): string => `${key}@${on.join(',')}`
  return {
    /** The fit estimate of `key` on `on` (head first), read once until the placements change. */
    async loadFit(key: string, on: readonly string[]): Promise<void> {
      const k = fitKey(key, on)
      if (fits[k]) return
      try {
        fits[k] = await useApi().call('modelFit', { key, nodes: [...on] })
      } catch (err) {
        fits[k] = { error: (err as Error).message }
      }
    },
    fitOf(key: string, on: readonly string[]): FitEstimate | { error: string } | null {
      return on.length === 0 ? null : (fits[fitKey(key, on)] ?? null)
    },
    forgetFits(): void {
      for (const k of Object.keys(fits)) delete fits[k]
    },
  }
}

/** What the operator starts: a placement, the swap on node1, a stop; the view follows through push events. */
function placementActions(
  loadPlacements: () => Promise<void>,
  startSwap: (key: string, mode: RunMode, confirmNoFit: boolean) => Promise<string>,
  followJob: (id: string) => void,
) {
  return {
    /**
     * Places `key` on `on` (head first). `displace` is the operator's yes to stopping what is placed
     * on those nodes (the dialog says so before the button).
     */
    async place(
      key: string,
      on: readonly string[],
      opts: { confirmNoFit: boolean; displace: boolean },
    ): Promise<OutputOf<'startPlacement'>> {
      const out = await useApi().call('startPlacement', {
        key,
        nodes: [...on],
        confirm_no_fit: opts.confirmNoFit,
        displace: opts.displace,
      })
      // Its progress shows at once, before the job's first step arrives.
      followJob(out.job_id)
      await loadPlacements()
      return out
    },
    /** Replaces the model on node1: the spec's swap (POST /api/swap/{key}), a placement job on node1. */
    swap: startSwap,
    async stop(id: string): Promise<OutputOf<'stopPlacement'>> {
      const out = await useApi().call('stopPlacement', { id })
      await loadPlacements()
      return out
    },
  }
}

/**
 * What runs where (docs/placements.md), the one store for it: every placement, every node and the
 * placement job in progress, read from GET /api/placements and replaced whole by each
 * `placements.changed` push event, so a reload shows the same state the events built. A swap is the
 * placement job on node1: the spec's GET /api/swap view of it (the loaded model, uptime, the swap's
 * phases and ETA) is held here too, and each `job.update` is applied once, to both.
 */
export const usePlacementsStore = defineStore('placements', () => {
  const view = ref<PlacementsView | null>(null)
  const { problems, error, reader } = usePartReads(['placements', 'swap', 'events'])
  const catalog = useCatalogStore()
  const node1 = useSwapOnNode1({
    weightsOf: (key) => catalog.weightsBytes(key),
    jobEnded: () => void Promise.all([catalog.loadCatalog(), catalog.loadDisk()]),
    loadedChanged: () => void catalog.loadCatalog(),
    report: (problem) => (problems.swap = problem),
  })

  const byId = computed(() => new Map((view.value?.placements ?? []).map((p) => [p.id, p])))
  const nodes = computed<PlacementNode[]>(() => view.value?.nodes ?? [])
  const busyReason = computed(() => placementBusyReason(view.value))
  const { loadFit, fitOf, forgetFits } = useFitsOn()

  /** The placement running on `node`, if any. */
  function placementOn(node: string): Placement | null {
    const id = view.value?.nodes.find((n) => n.name === node)?.placement_id ?? null
    return (
      (id !== null ? byId.value.get(id) : undefined) ??
      view.value?.placements.find((p) => p.nodes.includes(node)) ??
      null
    )
  }

  function nodeOf(node: string): PlacementNode | null {
    return view.value?.nodes.find((n) => n.name === node) ?? null
  }

  const loadPlacements = reader('placements', () => useApi().call('listPlacements', {}), view)

  /** Reads what runs where (at mount, on focus, after a resync): the placements and node1's swap view. */
  async function refresh(): Promise<void> {
    await Promise.all([loadPlacements(), node1.loadSwap()])
  }

  function apply(ev: OutputOf<'streamEvents'>): void {
    node1.sawServerTime(ev.at)
    switch (ev.name) {
      // The one event for what runs where: the view, and the job's step when one made it (`swap.state` is its alias for outside clients).
      case 'placements.changed':
        view.value = ev.data
        forgetFits()
        problems.placements = null
        // A daemon from before the step sends none (the schema's default is null).
        if (ev.data.step) node1.sawStep(ev.data.step)
        break
      case 'job.update':
        if (view.value && ev.data.kind === 'swap') view.value = viewWithJob(view.value, ev.data)
        node1.sawJob(ev.data)
        break
      case 'resync':
        void refresh()
        break
      default:
        break
    }
  }

  const pushEvents = pushEventFollower(apply, (problem) => (problems.events = problem))

  const actions = placementActions(loadPlacements, node1.startSwap, node1.followPlacementJob)

  function follow(): void {
    pushEvents.follow()
    node1.startClock()
  }

  function unfollow(): void {
    pushEvents.unfollow()
    node1.stopFollowing()
  }

  return {
    view,
    nodes,
    error,
    busyReason,
    placementOn,
    nodeOf,
    loadFit,
    fitOf,
    refresh,
    apply,
    ...actions,
    follow,
    unfollow,
    /** node1's model and swap, as GET /api/swap tells them. */
    swapView: node1.swap,
    swapJob: node1.swapJob,
    lastSwap: node1.lastSwap,
    loadedKey: node1.loadedKey,
    now: node1.now,
    uptimeS: node1.uptimeS,
    swapEta: node1.swapEta,
    dismissSwap: node1.dismissSwap,
  }
})
