import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { EventPayload, PushEvent } from '../contract/events'
import { ServiceLabel, snapshotNodes, type HardwareOk } from '../contract/nodes'

/**
 * Cluster metrics fed by the event bus: node hardware, reachability, service state and restarts,
 * deep-health results and the restarts they triggered, swaps, placements and download bytes.
 */
export function clusterMetrics(registers: Registry[]): (ev: PushEvent) => void {
  const g = (name: string, help: string, labelNames: string[]) => new Gauge({ name, help, labelNames, registers })
  const c = (name: string, help: string, labelNames: string[]) => new Counter({ name, help, labelNames, registers })
  const hardware = nodeMetrics(registers)
  const transitions = c('tandem_connectivity_transitions_total', 'Reachability changes by subject and new state', [
    'subject',
    'state',
  ])
  const serviceUp = g('tandem_service_up', 'Whether the service is Healthy (1) or not (0)', ['service'])
  const serviceState = g('tandem_service_state', 'The service’s current state label (1 for the current one)', [
    'service',
    'state',
  ])
  const restarts = g('tandem_service_container_restarts', 'Container restart count Docker reports', ['service'])
  const changes = c('tandem_service_state_changes_total', 'Service state changes', ['service', 'state'])
  const deep = c('tandem_deep_health_checks_total', 'Deep health checks by result', ['service', 'result'])
  const autoRestarts = c('tandem_deep_health_restarts_total', 'Restarts deep health performed', ['service'])
  const swaps = c('tandem_swaps_total', 'Model swaps finished, by result', ['result'])
  const swapSeconds = new Histogram({
    name: 'tandem_swap_duration_seconds',
    help: 'Model swap duration from validation to ready or failed',
    labelNames: ['result'],
    buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600],
    registers,
  })
  const download = c('tandem_download_bytes_total', 'Model bytes downloaded', [])
  // Ids are node sets, bounded by the nodes configured: safe as a label.
  const placementUp = g('tandem_placement_up', 'Whether the placement serves (1) or is lost or loading (0)', [
    'placement',
  ])
  const swapStarted = new Map<string, number>()
  const downloaded = new Map<string, number>()

  const service = (s: EventPayload<'service.state'>): void => {
    const l = { service: s.service }
    serviceUp.set(l, s.status.label === 'Healthy' ? 1 : 0)
    for (const state of ServiceLabel.options) serviceState.set({ ...l, state }, s.status.label === state ? 1 : 0)
    if (s.status.restart_count !== null) restarts.set(l, s.status.restart_count)
    if (s.previous !== s.status.label) changes.inc({ ...l, state: s.status.label })
  }

  const swap = (s: EventPayload<'placements.changed'>['step'], at: number): void => {
    if (s === null) return
    if (!swapStarted.has(s.job_id)) swapStarted.set(s.job_id, at)
    if (s.phase !== 'ready' && s.phase !== 'failed') return
    const result = s.phase === 'ready' ? 'succeeded' : 'failed'
    swaps.inc({ result })
    swapSeconds.observe({ result }, (at - swapStarted.get(s.job_id)!) / 1000)
    swapStarted.delete(s.job_id)
  }

  const job = (j: EventPayload<'job.update'>): void => {
    if (j.kind !== 'download') return
    const done = j.progress?.bytes_done ?? null
    if (done !== null) {
      const before = downloaded.get(j.id) ?? 0
      if (done > before) download.inc(done - before)
      downloaded.set(j.id, Math.max(before, done))
    }
    if (j.state !== 'running') downloaded.delete(j.id)
  }

  return (ev) => {
    switch (ev.name) {
      case 'hardware.snapshot':
        return hardware(ev.data)
      case 'connectivity.transition':
        return transitions.inc({ subject: ev.data.subject, state: ev.data.state })
      case 'service.state':
        return service(ev.data)
      case 'deephealth.result':
        deep.inc({ service: ev.data.service, result: ev.data.ok ? 'ok' : ev.data.wedged ? 'wedged' : 'failed' })
        if (ev.data.restart.done) autoRestarts.inc({ service: ev.data.service })
        return
      case 'job.update':
        return job(ev.data)
      // The job's step comes with the view; `swap.state`, its alias for outside clients, is not read.
      case 'swap.state':
        return
      case 'placements.changed':
        swap(ev.data.step, ev.at)
        placementUp.reset()
        for (const p of ev.data.placements)
          placementUp.set({ placement: p.id }, p.state === 'ready' || p.state === 'unknown' ? 1 : 0)
        return
    }
  }
}

/** Node gauges from each hardware snapshot: reachability, load, RAM, disk, GPU. */
function nodeMetrics(registers: Registry[]): (snap: EventPayload<'hardware.snapshot'>) => void {
  const node = nodeGauges(registers)
  return (snap) => {
    for (const h of snapshotNodes(snap)) {
      if (h.status === 'not_configured') continue
      node.up.set({ node: h.node }, h.status === 'ok' ? 1 : 0)
      // An unreachable node keeps its last figures: only `up` says they are stale.
      if (h.status === 'ok') setReading(node, h)
    }
  }
}

function nodeGauges(registers: Registry[]) {
  const g = (name: string, help: string, labelNames: string[]) => new Gauge({ name, help, labelNames, registers })
  return {
    up: g('tandem_node_up', 'Whether the node answered its last hardware probe (1) or not (0)', ['node']),
    load1: g('tandem_node_load1', 'One-minute load average of the node', ['node']),
    cores: g('tandem_node_cpu_cores', 'CPU cores of the node', ['node']),
    ramUsed: g('tandem_node_memory_used_bytes', 'RAM in use on the node', ['node']),
    ramTotal: g('tandem_node_memory_total_bytes', 'RAM of the node', ['node']),
    diskUsed: g('tandem_node_disk_used_bytes', 'Bytes used on the node’s model disk', ['node', 'mount']),
    diskTotal: g('tandem_node_disk_total_bytes', 'Size of the node’s model disk', ['node', 'mount']),
    gpuUtil: g('tandem_node_gpu_utilization_ratio', 'GPU utilisation, 0 to 1', ['node']),
    gpuTemp: g('tandem_node_gpu_temperature_celsius', 'GPU temperature', ['node']),
    gpuPower: g('tandem_node_gpu_power_watts', 'GPU power draw', ['node']),
    gpuMem: g('tandem_node_gpu_memory_used_bytes', 'GPU memory in use (compute processes on unified memory)', ['node']),
    gpuMemTotal: g('tandem_node_gpu_memory_total_bytes', 'GPU memory (system RAM on unified memory)', ['node']),
    unified: g('tandem_node_gpu_unified_memory', 'Whether the GPU shares system RAM (1) or not (0)', ['node']),
  }
}

type NodeGauges = ReturnType<typeof nodeGauges>

/** A reachable node's figures; one the probe could not read keeps its last value. */
function setReading(node: NodeGauges, h: HardwareOk): void {
  const l = { node: h.node }
  if (h.load[0] !== undefined) node.load1.set(l, h.load[0])
  if (h.cores !== null) node.cores.set(l, h.cores)
  if (h.ram) node.ramUsed.set(l, h.ram.used_bytes)
  if (h.ram) node.ramTotal.set(l, h.ram.total_bytes)
  if (h.disk) node.diskUsed.set({ ...l, mount: h.disk.mount }, h.disk.used_bytes)
  if (h.disk) node.diskTotal.set({ ...l, mount: h.disk.mount }, h.disk.total_bytes)
  node.unified.set(l, h.gpu_unified_memory ? 1 : 0)
  if (h.gpu) setGpuReading(node, l, h.gpu)
}

function setGpuReading(node: NodeGauges, l: { node: string }, gpu: NonNullable<HardwareOk['gpu']>): void {
  if (gpu.utilization_pct !== null) node.gpuUtil.set(l, gpu.utilization_pct / 100)
  if (gpu.temperature_c !== null) node.gpuTemp.set(l, gpu.temperature_c)
  if (gpu.power_w !== null) node.gpuPower.set(l, gpu.power_w)
  if (gpu.memory_used_bytes !== null) node.gpuMem.set(l, gpu.memory_used_bytes)
  if (gpu.memory_total_bytes !== null) node.gpuMemTotal.set(l, gpu.memory_total_bytes)
}
