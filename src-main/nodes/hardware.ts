import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import {
  hardwareSnapshot,
  type HardwareOk,
  type HardwareSample,
  type HardwareSnapshot,
  type NodeHardware,
} from '../contract/nodes'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'
import type { NodeName } from '../contract/schemas'
import { nodeNames, type NodeTargets } from '../config/load'
import type { ConnectivityStore } from './connectivity'
import { HardwareHistory } from './hardwareHistory'
import {
  clusterAddress,
  diskFromDf,
  gpuFromNvidiaSmi,
  memoryFromFree,
  networkFromIp,
  num,
  parseUptime,
  sections,
  unifiedPool,
} from './probeOutput'

/** When a probe that failed without a remembered connection failure is tried again. */
export const BROKEN_PROBE_RETRY_MS = 10_000

/** Spec 1, section 8: hardware results are reused for 4 s. */
export const HARDWARE_CACHE_MS = 4000

/**
 * The cluster link as the launcher's autodiscover.sh finds it: the RDMA ports `ibdev2netdev`
 * reports `(Up)`, then each one's IPv4 address (`ip -o -f inet addr show <netdev>`). Bounded: at
 * most 32 lines of ports and 8 devices asked.
 */
export const CLUSTER_LINK_PROBE = [
  `ib=''; if command -v ibdev2netdev >/dev/null 2>&1; then ib=$(ibdev2netdev 2>/dev/null | head -n 32); fi`,
  `echo '@@ibdev'; if [ -n "$ib" ]; then printf '%s\n' "$ib"; fi`,
  `echo '@@clusterinet'; if [ -n "$ib" ]; then printf '%s\n' "$ib" | awk '/Up\\)/ {print $5}' | head -n 8 | while read -r d; do ip -o -f inet addr show "$d" 2>/dev/null | head -n 1; done; fi`,
].join('\n')

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
  CLUSTER_LINK_PROBE,
  "echo '@@end'",
].join('\n')

type Parsed = Omit<HardwareOk, 'node' | 'status' | 'host' | 'probed_at' | 'probe_ms'>

/** Parses the probe's output. Pure, so the parsing is tested against captured output. */
export function parseHardware(stdout: string): Parsed {
  const sec = sections(stdout)
  const hostname = sec.hostname?.[0]?.trim() ?? ''
  const { uptime_s, load } = parseUptime(sec.uptime?.[0] ?? '')
  const cores = num(sec.nproc?.[0])
  const ram = memoryFromFree(sec.free)
  const disk = diskFromDf(sec.df)
  const { gpu, unified } = gpuFromNvidiaSmi(sec.gpu, sec.gpuapps, ram)
  const memory_pool = unified ? unifiedPool(ram, gpu?.processes ?? []) : null
  const { interface: iface, mac } = networkFromIp(sec.route, sec.link)
  const cluster_ip = clusterAddress(sec.ibdev, sec.clusterinet)
  return {
    hostname,
    uptime_s,
    load,
    cores,
    ram,
    disk,
    gpu,
    gpu_unified_memory: unified,
    memory_pool,
    interface: iface,
    mac,
    cluster_ip,
  }
}

export interface HardwareDeps {
  pool: SshPool
  connectivity: ConnectivityStore
  clock: Clock
  logger: Logger
  /** Every configured node (node1 and node2 always, null when not configured). */
  targets: NodeTargets
  events?: EventPublisher
  /** Where readings are kept (and saved); in memory only when absent. */
  history?: HardwareHistory
}

/**
 * Probes every configured node in parallel; concurrent callers share one probe and results are reused for
 * 4 s. Each probe updates the node's connectivity state and caches its MAC.
 */
export class HardwareService {
  private cached: { at: number; snapshot: HardwareSnapshot } | null = null
  private inflight: { fresh: boolean; snapshot: Promise<HardwareSnapshot> } | null = null
  private readonly samples: HardwareHistory
  /** A probe due when a down node's remembered failure ends, per node. */
  private readonly retries = new Map<NodeName, { at: number; timer: ReturnType<typeof setTimeout> }>()
  /** When the last attempt that really tried a down node began, per node. */
  private readonly lastFailed = new Map<NodeName, number>()

  constructor(private readonly deps: HardwareDeps) {
    this.samples =
      deps.history ?? new HardwareHistory(null, deps.clock, deps.logger, nodeNames({ nodes: deps.targets }))
  }

  /**
   * `fresh`: probe now, past both the 4-s cache and the pool's memory of an unreachable node (a
   * node that just came back shows as up at once). Concurrent callers join the probe in flight; a
   * fresh caller joins only a fresh one.
   */
  async snapshot(opts: { fresh?: boolean } = {}): Promise<HardwareSnapshot> {
    const fresh = opts.fresh === true
    const now = this.deps.clock.now()
    if (!fresh && this.cached && now - this.cached.at < HARDWARE_CACHE_MS) return this.cached.snapshot
    if (this.inflight && (this.inflight.fresh || !fresh)) return this.inflight.snapshot
    const inflight = {
      fresh,
      snapshot: (async () => {
        const more = nodeNames({ nodes: this.deps.targets }).filter((n) => n !== 'node1' && n !== 'node2')
        const [node1, node2, ...rest] = await Promise.all([
          this.probe('node1', fresh),
          this.probe('node2', fresh),
          ...more.map((name) => this.probe(name, fresh)),
        ])
        const snapshot = hardwareSnapshot(node1, node2, rest, this.deps.clock.now())
        this.cached = { at: this.deps.clock.now(), snapshot }
        this.deps.events?.publish('hardware.snapshot', snapshot)
        return snapshot
      })().finally(() => {
        if (this.inflight === inflight) this.inflight = null
      }),
    }
    this.inflight = inflight
    return inflight.snapshot
  }

  /** Readings of the last 15 minutes per node, oldest first (for the dashboard's charts). */
  history(): ReturnType<HardwareHistory['view']> {
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

  async probe(node: NodeName, fresh = false): Promise<NodeHardware> {
    const target = this.deps.targets[node] ?? null
    if (!target) return { node, status: 'not_configured' }
    const { pool, connectivity, clock } = this.deps
    const started = clock.now()
    const t0 = performance.now()
    try {
      const res = await pool.exec(target, HARDWARE_PROBE, { timeoutMs: PROBE_TIMEOUT_MS, fresh })
      const parsed = parseHardware(res.stdout)
      if (!res.stdout.includes('@@end'))
        throw new Error(`hardware probe failed (exit ${res.code}): ${res.stderr.trim().slice(0, 300)}`)
      await connectivity.observe(node, true, this.backDetail(node, started))
      this.cancelRetry(node)
      if (parsed.mac) await connectivity.setMac(node, parsed.mac)
      this.samples.remember(node, sampleOf(parsed, started))
      return {
        node,
        status: 'ok',
        host: target.host,
        ...parsed,
        probed_at: started,
        probe_ms: Math.round(performance.now() - t0),
      }
    } catch (err) {
      return this.unreachable(node, target, err, started)
    }
  }

  /**
   * Marks the node down from when the failing probe began and reports why, with the MAC kept from
   * an earlier probe (for Wake) and when it is tried again for real.
   */
  private async unreachable(node: NodeName, target: SshTarget, err: unknown, probedAt: number): Promise<NodeHardware> {
    const { connectivity } = this.deps
    const message = err instanceof Error ? err.message : String(err)
    // A cached failure is the last attempt's answer again, not a new look at the node.
    if (!(err instanceof SshError && err.cached)) this.lastFailed.set(node, probedAt)
    await connectivity.observe(node, false, message, probedAt)
    // The pool remembers a failed connection for 25 s; a probe that failed on a live connection (the
    // channel broke as the node went down, or the command failed) is tried again after a short wait.
    const retryAt = this.deps.pool.retryAt(target) ?? this.deps.clock.now() + BROKEN_PROBE_RETRY_MS
    this.retryWhenDue(node, retryAt)
    return {
      node,
      status: 'unreachable',
      host: target.host,
      port: target.port,
      error: message,
      error_kind: err instanceof SshError ? err.kind : null,
      mac: connectivity.mac(node),
      probed_at: probedAt,
      retry_at: retryAt,
    }
  }

  /**
   * Probes again the moment the pool's memory of the failure ends, so a node that came back is seen
   * then (not at whatever probe comes next) and "checking again in N s" holds.
   */
  private retryWhenDue(node: NodeName, at: number): void {
    const pending = this.retries.get(node)
    if (pending?.at === at) return
    if (pending) clearTimeout(pending.timer)
    const timer = setTimeout(
      () => {
        this.retries.delete(node)
        this.invalidate()
        this.snapshot().catch((e: unknown) => this.deps.logger.warn('retry probe failed', { node, error: e }))
      },
      Math.max(0, at - this.deps.clock.now()) + 50,
    )
    timer.unref?.()
    this.retries.set(node, { at, timer })
  }

  /**
   * What the way back up says besides the outage's length: the node came back somewhere between the
   * last attempt that failed for real and this probe (the failure is remembered 25 s in between).
   */
  private backDetail(node: NodeName, probedAt: number): string | undefined {
    const last = this.lastFailed.get(node)
    this.lastFailed.delete(node)
    if (last === undefined || this.deps.connectivity.state(node)?.state !== 'down') return undefined
    return `back within ${Math.max(0, Math.round((probedAt - last) / 1000))} s after the last failed attempt`
  }

  private cancelRetry(node: NodeName): void {
    const pending = this.retries.get(node)
    if (pending) clearTimeout(pending.timer)
    this.retries.delete(node)
  }

  /** Stops the retries still waiting (at shutdown). */
  stop(): void {
    for (const node of [...this.retries.keys()]) this.cancelRetry(node)
  }
}

type GpuFigures = Pick<
  NonNullable<Parsed['gpu']>,
  'utilization_pct' | 'temperature_c' | 'power_w' | 'memory_used_bytes' | 'memory_total_bytes'
>
const NO_GPU: GpuFigures = {
  utilization_pct: null,
  temperature_c: null,
  power_w: null,
  memory_used_bytes: null,
  memory_total_bytes: null,
}

/** The figures of a reading the dashboard charts over time. */
function sampleOf(parsed: Parsed, at: number): HardwareSample {
  const gpu = parsed.gpu ?? NO_GPU
  const pool = parsed.memory_pool
  return {
    at,
    gpu_utilization_pct: gpu.utilization_pct,
    gpu_temperature_c: gpu.temperature_c,
    gpu_power_w: gpu.power_w,
    load1: parsed.load[0] ?? null,
    ram_used_bytes: pool ? pool.total_bytes - pool.free_bytes : (parsed.ram?.used_bytes ?? null),
    ram_total_bytes: parsed.ram?.total_bytes ?? null,
    gpu_memory_used_bytes: gpu.memory_used_bytes,
    gpu_memory_total_bytes: gpu.memory_total_bytes,
    engine_memory_bytes: pool?.engine_bytes ?? null,
  }
}
