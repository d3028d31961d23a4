import type { Clock } from '../core/clock'
import type { EventPublisher } from '../core/events'
import type { Logger } from '../core/logger'
import type { HardwareOk, HardwareSample, HardwareSnapshot, NodeHardware } from '../contract/nodes'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'
import { normalizeMac, type NodeName } from '../contract/schemas'
import type { ConnectivityStore } from './connectivity'
import { HardwareHistory } from './hardwareHistory'

/** Spec 1, section 8: hardware results are reused for 4 s. */
export const HARDWARE_CACHE_MS = 4000
export { HISTORY_MS } from './hardwareHistory'

/**
 * One SSH command per node gathers everything; sections are delimited so a missing tool (no GPU,
 * no iproute2) only blanks its own section. Only standard tools: procps, coreutils, iproute2, awk.
 */
export const HARDWARE_PROBE = [
  "echo '@@hostname'; hostname",
  "echo '@@uptime'; uptime",
  "echo '@@nproc'; nproc",
  "echo '@@free'; free -b",
  "echo '@@df'; df -P -B1 /",
  "echo '@@gpu'; if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-gpu=name,utilization.gpu,temperature.gpu,power.draw,memory.total,memory.used --format=csv,noheader,nounits 2>&1; fi",
  "echo '@@gpuapps'; if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits 2>/dev/null; fi",
  'route=$(ip route show default 2>/dev/null)',
  `echo '@@route'; printf '%s\n' "$route"`,
  `dev=$(printf '%s\n' "$route" | awk '{for(i=1;i<NF;i++) if($i=="dev"){print $(i+1); exit}}')`,
  `echo '@@link'; if [ -n "$dev" ]; then ip -o link show dev "$dev" 2>/dev/null; fi`,
  "echo '@@end'",
].join('\n')

type Parsed = Omit<HardwareOk, 'node' | 'status' | 'host' | 'probed_at' | 'probe_ms'>

const MIB = 1024 * 1024

export function sections(stdout: string): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  let current: string | null = null
  for (const line of stdout.split('\n')) {
    const m = /^@@([a-z]+)$/.exec(line.trim())
    if (m) {
      current = m[1] as string
      out[current] = []
    } else if (current !== null && line.trim() !== '') out[current]!.push(line)
  }
  return out
}

const num = (s: string | undefined): number | null => {
  if (s === undefined) return null
  const t = s.trim()
  if (t === '' || /^\[.*\]$/.test(t) || /n\/a/i.test(t)) return null
  const n = Number(t.replace(/\s*(%|W|MiB|C)$/i, ''))
  return Number.isFinite(n) ? n : null
}

/** `up 3 days,  4:05` / `up 45 min` / `up 1 day, 10 min` / `up 2:03` → seconds. */
export function parseUptime(line: string): { uptime_s: number | null; load: number[] } {
  const load = /load averages?:\s*([\d.]+),?\s+([\d.]+),?\s+([\d.]+)/.exec(line)
  const loads = load ? [Number(load[1]), Number(load[2]), Number(load[3])] : []
  const up = /\bup\s+(.*?),\s+(?:\d+\s+users?,\s+)?load average/.exec(line)
  if (!up) return { uptime_s: null, load: loads }
  let s = 0
  let matched = false
  for (const part of (up[1] as string).split(',').map((p) => p.trim())) {
    let m: RegExpExecArray | null
    if ((m = /^(\d+)\s+days?$/.exec(part))) s += Number(m[1]) * 86400
    else if ((m = /^(\d+):(\d{2})$/.exec(part))) s += Number(m[1]) * 3600 + Number(m[2]) * 60
    else if ((m = /^(\d+)\s+min/.exec(part))) s += Number(m[1]) * 60
    else if ((m = /^(\d+)\s+(?:hrs?|hours?)$/.exec(part))) s += Number(m[1]) * 3600
    else if ((m = /^(\d+)\s+(?:secs?|seconds?)$/.exec(part))) s += Number(m[1])
    else continue
    matched = true
  }
  return { uptime_s: matched ? s : null, load: loads }
}

/** Parses the probe's output. Pure, so the parsing is tested against captured output. */
export function parseHardware(stdout: string): Parsed {
  const sec = sections(stdout)
  const hostname = sec.hostname?.[0]?.trim() ?? ''
  const { uptime_s, load } = parseUptime(sec.uptime?.[0] ?? '')
  const cores = num(sec.nproc?.[0])

  let ram: Parsed['ram'] = null
  const mem = sec.free?.find((l) => l.startsWith('Mem:'))
  if (mem) {
    const f = mem.trim().split(/\s+/).slice(1).map(Number)
    const [total, used, , , , available] = f
    if (total !== undefined && Number.isFinite(total) && used !== undefined)
      ram = { total_bytes: total, used_bytes: used, available_bytes: available ?? total - used }
  }

  let disk: Parsed['disk'] = null
  const dfLine = sec.df?.filter((l) => !l.startsWith('Filesystem')).at(-1)
  if (dfLine) {
    const f = dfLine.trim().split(/\s+/)
    // Filesystem, 1-blocks, Used, Available, Capacity, Mounted on
    const [total, used, avail] = [Number(f[1]), Number(f[2]), Number(f[3])]
    if ([total, used, avail].every(Number.isFinite))
      disk = { mount: f.slice(5).join(' ') || '/', total_bytes: total, used_bytes: used, available_bytes: avail }
  }

  let gpu: Parsed['gpu'] = null
  let unified = false
  const gpuLine = sec.gpu?.find((l) => l.split(',').length >= 6)
  if (gpuLine) {
    const [name, util, temp, power, memTotal, memUsed] = gpuLine.split(',').map((s) => s.trim())
    const processes = (sec.gpuapps ?? [])
      .map((l) => l.split(',').map((s) => s.trim()))
      .filter((f) => f.length >= 3 && num(f[0]) !== null)
      .map((f) => ({ pid: num(f[0]) as number, name: f[1] as string, used_bytes: (num(f[2]) ?? 0) * MIB }))
    const totalMiB = num(memTotal)
    let used: number | null
    let total: number | null
    if (totalMiB === null) {
      // Unified memory (GB10): the driver reports no total; the GPU shares system RAM.
      unified = true
      used = processes.reduce((a, p) => a + p.used_bytes, 0)
      total = ram?.total_bytes ?? null
    } else {
      used = num(memUsed) === null ? null : (num(memUsed) as number) * MIB
      total = totalMiB * MIB
    }
    gpu = {
      name: name ?? 'GPU',
      utilization_pct: num(util),
      temperature_c: num(temp),
      power_w: num(power),
      memory_used_bytes: used,
      memory_total_bytes: total,
      memory_fraction: used !== null && total ? Math.round((used / total) * 10000) / 10000 : null,
      processes,
    }
  }

  const route = sec.route?.[0] ?? ''
  const iface = /\bdev\s+(\S+)/.exec(route)?.[1] ?? null
  const link = (sec.link ?? []).join(' ')
  const rawMac = /link\/ether\s+([0-9a-fA-F:]{17})/.exec(link)?.[1]
  const mac = rawMac ? normalizeMac(rawMac) : null

  return { hostname, uptime_s, load, cores, ram, disk, gpu, gpu_unified_memory: unified, interface: iface, mac }
}

export interface HardwareDeps {
  pool: SshPool
  connectivity: ConnectivityStore
  clock: Clock
  logger: Logger
  targets: Record<NodeName, SshTarget | null>
  events?: EventPublisher
  /** Where readings are kept (and saved); in memory only when absent. */
  history?: HardwareHistory
}

/**
 * Probes both nodes in parallel; concurrent callers share one probe and results are reused for
 * 4 s. Each probe updates the node's connectivity state and caches its MAC.
 */
export class HardwareService {
  private cached: { at: number; snapshot: HardwareSnapshot } | null = null
  private inflight: Promise<HardwareSnapshot> | null = null
  private readonly samples: HardwareHistory

  constructor(private readonly deps: HardwareDeps) {
    this.samples = deps.history ?? new HardwareHistory(null, deps.clock, deps.logger)
  }

  async snapshot(opts: { fresh?: boolean } = {}): Promise<HardwareSnapshot> {
    const now = this.deps.clock.now()
    if (!opts.fresh && this.cached && now - this.cached.at < HARDWARE_CACHE_MS) return this.cached.snapshot
    if (this.inflight) return this.inflight
    this.inflight = (async () => {
      const [node1, node2] = await Promise.all([this.probe('node1'), this.probe('node2')])
      const snapshot: HardwareSnapshot = { node1, node2, taken_at: this.deps.clock.now() }
      this.cached = { at: this.deps.clock.now(), snapshot }
      this.deps.events?.publish('hardware.snapshot', snapshot)
      return snapshot
    })().finally(() => {
      this.inflight = null
    })
    return this.inflight
  }

  /** Readings of the last 15 minutes per node, oldest first (for the dashboard's charts). */
  history(): Record<NodeName, HardwareSample[]> {
    return this.samples.view()
  }

  /** Saves readings not yet written (at shutdown). */
  flushHistory(): void {
    this.samples.flush()
  }

  /** Drops the cached snapshot (after a wake, so the next poll looks again). */
  invalidate(): void {
    this.cached = null
  }

  async probe(node: NodeName): Promise<NodeHardware> {
    const target = this.deps.targets[node]
    if (!target) return { node, status: 'not_configured' }
    const { pool, connectivity, clock } = this.deps
    const started = clock.now()
    const t0 = performance.now()
    try {
      const res = await pool.exec(target, HARDWARE_PROBE, { timeoutMs: PROBE_TIMEOUT_MS })
      const parsed = parseHardware(res.stdout)
      if (!res.stdout.includes('@@end'))
        throw new Error(`hardware probe failed (exit ${res.code}): ${res.stderr.trim().slice(0, 300)}`)
      await connectivity.observe(node, true)
      if (parsed.mac) await connectivity.setMac(node, parsed.mac)
      this.samples.remember(node, {
        at: started,
        gpu_utilization_pct: parsed.gpu?.utilization_pct ?? null,
        gpu_temperature_c: parsed.gpu?.temperature_c ?? null,
        gpu_power_w: parsed.gpu?.power_w ?? null,
        load1: parsed.load[0] ?? null,
        ram_used_bytes: parsed.ram?.used_bytes ?? null,
        ram_total_bytes: parsed.ram?.total_bytes ?? null,
        gpu_memory_used_bytes: parsed.gpu?.memory_used_bytes ?? null,
        gpu_memory_total_bytes: parsed.gpu?.memory_total_bytes ?? null,
      })
      return {
        node,
        status: 'ok',
        host: target.host,
        ...parsed,
        probed_at: started,
        probe_ms: Math.round(performance.now() - t0),
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      await connectivity.observe(node, false, message)
      return {
        node,
        status: 'unreachable',
        host: target.host,
        port: target.port,
        error: message,
        error_kind: err instanceof SshError ? err.kind : null,
        mac: connectivity.mac(node),
        probed_at: started,
      }
    }
  }
}
