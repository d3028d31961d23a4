import { defineStore } from 'pinia'
import { computed, reactive, ref } from 'vue'
import { useApi, type OutputOf } from '../api'
import { pushEventFollower } from './pushEvents'
import type { FitEstimate } from '../../src-main/contract/models'
import type { Placement, PlacementsView } from '../../src-main/contract/placements'

export type { Placement, PlacementsView }
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

/**
 * What runs where (docs/placements.md): every placement, every node and the placement job in
 * progress. Read from GET /api/placements, then replaced whole by each `placements.changed` push
 * event, so a reload shows the same state the events built.
 */
export const usePlacementsStore = defineStore('placements', () => {
  const view = ref<PlacementsView | null>(null)
  const readError = ref<string | null>(null)
  const eventsError = ref<string | null>(null)
  const error = computed(() => [readError.value, eventsError.value].filter((e) => e !== null).join('; ') || null)

  const byId = computed(() => new Map((view.value?.placements ?? []).map((p) => [p.id, p])))
  const nodes = computed<PlacementNode[]>(() => view.value?.nodes ?? [])
  const busyReason = computed(() => placementBusyReason(view.value))
  /** Fit estimates on chosen nodes, until the placements change (what is free changes with them). */
  const fits = reactive<Record<string, FitEstimate | { error: string }>>({})
  const fitKey = (key: string, on: readonly string[]): string => `${key}@${on.join(',')}`

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

  /** Reads the whole view (at mount, on focus, after a resync). */
  async function refresh(): Promise<void> {
    try {
      view.value = await useApi().call('listPlacements', {})
      readError.value = null
    } catch (err) {
      readError.value = `placements: ${(err as Error).message}`
    }
  }

  function apply(ev: OutputOf<'streamEvents'>): void {
    switch (ev.name) {
      case 'placements.changed':
        view.value = ev.data
        for (const k of Object.keys(fits)) delete fits[k]
        readError.value = null
        break
      case 'job.update':
        if (view.value && ev.data.kind === 'swap') view.value = viewWithJob(view.value, ev.data)
        break
      case 'resync':
        void refresh()
        break
      default:
        break
    }
  }

  const pushEvents = pushEventFollower(apply, (problem) => (eventsError.value = problem && `placements: ${problem}`))

  /** The fit estimate of `key` on `on` (head first), read once until the placements change. */
  async function loadFit(key: string, on: readonly string[]): Promise<void> {
    const k = fitKey(key, on)
    if (fits[k]) return
    try {
      fits[k] = await useApi().call('modelFit', { key, nodes: [...on] })
    } catch (err) {
      fits[k] = { error: (err as Error).message }
    }
  }

  function fitOf(key: string, on: readonly string[]): FitEstimate | { error: string } | null {
    return on.length === 0 ? null : (fits[fitKey(key, on)] ?? null)
  }

  /**
   * Places `key` on `nodes` (head first); the view follows through push events. `displace` is the
   * operator's yes to stopping what is placed on those nodes (the dialog says so before the button).
   */
  async function place(
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
    await refresh()
    return out
  }

  async function stop(id: string): Promise<OutputOf<'stopPlacement'>> {
    const out = await useApi().call('stopPlacement', { id })
    await refresh()
    return out
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
    place,
    stop,
    follow: pushEvents.follow,
    unfollow: pushEvents.unfollow,
  }
})
