import { defineStore } from 'pinia'
import { computed, reactive, ref } from 'vue'
import { useApi, type OutputOf } from '../api'
import { pushEventFollower } from './pushEvents'

export type Snapshot = OutputOf<'getHardware'>
export type Connectivity = OutputOf<'getConnectivity'>
export type ServiceStatus = OutputOf<'getStatus'>['llm']
/** A placement's engine as a service (`llm@<placement id>`), beside llm, asr and tts. */
export type PlacementServiceStatus = OutputOf<'getStatus'>['placements'][number]
export type ClusterEvent = OutputOf<'streamEvents'>
type NodeName = string
type ServiceName = 'llm' | 'asr' | 'tts'
type Part = 'hardware' | 'services' | 'connectivity' | 'events'

/** Hardware samples kept for the charts. */
export interface Sample {
  t: number
  util: number | null
  temp: number | null
  load1: number | null
  ramUsed: number | null
  ramTotal: number | null
  gpuMemUsed: number | null
  gpuMemTotal: number | null
  /** On unified memory: the engines' share of the pool (ramUsed is then the pool in use). */
  engineMem: number | null
}

/** How far back the charts reach (the daemon keeps the same window: nodes/hardwareHistory.ts). */
export const HISTORY_MS = 15 * 60 * 1000
/** The connectivity log the daemon keeps (spec 1, 2.7). */
const MAX_LOG = 200

export type NodeHardware = Snapshot['node1']
type NodeReading = Extract<NodeHardware, { status: 'ok' }>
type SavedReading = OutputOf<'getHardwareHistory'>['node1'][number]

/** A snapshot's node rows in node order: node1, node2, then node3… when NODES lists more. */
export function snapshotNodes(snap: Snapshot): NodeHardware[] {
  const rows = Object.values(snap).filter((v): v is NodeHardware => typeof v === 'object' && v !== null)
  return rows.sort((a, b) => Number(a.node.slice(4)) - Number(b.node.slice(4)))
}

/** What is in use: the one pool on unified memory, else RAM. */
function memoryInUse(hw: NodeReading): number | null {
  const pool = hw.memory_pool
  return pool ? pool.total_bytes - pool.free_bytes : (hw.ram?.used_bytes ?? null)
}

/** A live reading as a chart sample at `t` (seconds). */
function sampleOf(hw: NodeReading, t: number): Sample {
  return {
    t,
    util: hw.gpu?.utilization_pct ?? null,
    temp: hw.gpu?.temperature_c ?? null,
    load1: hw.load[0] ?? null,
    ramUsed: memoryInUse(hw),
    ramTotal: hw.ram?.total_bytes ?? null,
    gpuMemUsed: hw.gpu?.memory_used_bytes ?? null,
    gpuMemTotal: hw.gpu?.memory_total_bytes ?? null,
    engineMem: hw.memory_pool?.engine_bytes ?? null,
  }
}

/** A reading the server kept, as a chart sample. */
function savedSample(x: SavedReading): Sample {
  return {
    t: Math.round(x.at / 1000),
    util: x.gpu_utilization_pct,
    temp: x.gpu_temperature_c,
    load1: x.load1,
    // Readings saved by an older daemon have no memory figures.
    ramUsed: x.ram_used_bytes ?? null,
    ramTotal: x.ram_total_bytes ?? null,
    gpuMemUsed: x.gpu_memory_used_bytes ?? null,
    gpuMemTotal: x.gpu_memory_total_bytes ?? null,
    engineMem: x.engine_memory_bytes ?? null,
  }
}

/** Adds a snapshot's readings to the charts' samples, dropping those older than HISTORY_MS. */
function record(history: Record<NodeName, Sample[]>, snap: Snapshot): void {
  for (const hw of snapshotNodes(snap)) {
    if (hw.status !== 'ok') continue
    const list = (history[hw.node] ??= [])
    const t = Math.round(hw.probed_at / 1000)
    if ((list.at(-1)?.t ?? 0) >= t) continue
    list.push(sampleOf(hw, t))
    while (list.length > 0 && list[0]!.t < (Date.now() - HISTORY_MS) / 1000) list.shift()
  }
}

/**
 * The cluster as the dashboard sees it: read once, then kept current by push events (hardware
 * snapshots, connectivity transitions, service state changes) instead of polling.
 */
export const useClusterStore = defineStore('cluster', () => {
  const hardware = ref<Snapshot | null>(null)
  const connectivity = ref<Connectivity | null>(null)
  const services = ref<Partial<Record<ServiceName, ServiceStatus>>>({})
  const placementServices = ref<PlacementServiceStatus[]>([])
  const history = reactive<Record<NodeName, Sample[]>>({ node1: [], node2: [] })
  const problems = reactive<Record<Part, string | null>>({
    hardware: null,
    services: null,
    connectivity: null,
    events: null,
  })
  const now = ref(Date.now())
  // One failing part never blanks the others; each says what failed.
  const error = computed(() => {
    const parts = (Object.entries(problems) as [Part, string | null][]).filter(([, v]) => v !== null)
    return parts.length > 0 ? parts.map(([k, v]) => `${k}: ${v}`).join('; ') : null
  })

  function setHardware(snap: Snapshot): void {
    hardware.value = snap
    record(history, snap)
    now.value = Date.now()
  }

  /** The server keeps 15 minutes of readings (across restarts), so the charts are full from the first paint. */
  async function loadHistory(): Promise<void> {
    try {
      const h = await useApi().call('getHardwareHistory', {})
      for (const [name, saved] of Object.entries(h)) history[name] = saved.map(savedSample)
    } catch {
      // The charts fill from hardware events instead.
    }
  }

  /** Reads everything once (at mount, on focus, after a resync). */
  async function refresh(): Promise<void> {
    const api = useApi()
    now.value = Date.now()
    const [hw, st] = await Promise.allSettled([api.call('getHardware', {}), api.call('getStatus', {})])
    if (hw.status === 'fulfilled') setHardware(hw.value)
    problems.hardware = hw.status === 'rejected' ? (hw.reason as Error).message : null
    setStatus(st)
    try {
      // Read after the probes, which record transitions.
      connectivity.value = await api.call('getConnectivity', {})
      problems.connectivity = null
    } catch (err) {
      problems.connectivity = (err as Error).message
    }
  }

  function setStatus(st: PromiseSettledResult<OutputOf<'getStatus'>>): void {
    if (st.status === 'fulfilled') {
      services.value = { llm: st.value.llm, asr: st.value.asr, tts: st.value.tts }
      placementServices.value = st.value.placements
    }
    problems.services = st.status === 'rejected' ? (st.reason as Error).message : null
  }

  /** The services alone, read again when what runs where changed (a placement's row comes, goes or changes). */
  async function refreshServices(): Promise<void> {
    const [st] = await Promise.allSettled([useApi().call('getStatus', {})])
    setStatus(st)
  }

  function apply(ev: ClusterEvent): void {
    switch (ev.name) {
      case 'hardware.snapshot':
        setHardware(ev.data)
        break
      case 'service.state':
        services.value = { ...services.value, [ev.data.service]: ev.data.status }
        break
      case 'connectivity.transition': {
        const c = connectivity.value
        if (!c) break
        const events = [...c.events, ev.data].slice(-MAX_LOG)
        const subjects = { ...c.subjects, [ev.data.subject]: { state: ev.data.state, last_change: ev.data.at } }
        connectivity.value = { ...c, events, subjects }
        now.value = Date.now()
        break
      }
      case 'placements.changed':
        void refreshServices()
        break
      case 'resync':
        void refresh()
        break
      default:
        break
    }
  }

  const pushEvents = pushEventFollower(apply, (problem) => (problems.events = problem))
  const follow = pushEvents.follow

  const unfollow = pushEvents.unfollow

  return {
    hardware,
    connectivity,
    services,
    placementServices,
    history,
    now,
    error,
    setHardware,
    loadHistory,
    refreshServices,
    refresh,
    follow,
    unfollow,
  }
})
