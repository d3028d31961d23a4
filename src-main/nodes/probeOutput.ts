import { isIPv4 } from 'node:net'
import { ENGINE_PROCESS_PREFIX, type HardwareOk, type MemoryPool } from '../contract/nodes'
import { normalizeMac } from '../contract/schemas'

/**
 * Parsers for the sections of the hardware probe's output (`HARDWARE_PROBE` in hardware.ts), one
 * per tool. Pure, so each is tested against captured output.
 */

type Ram = HardwareOk['ram']
type Disk = HardwareOk['disk']
type Gpu = NonNullable<HardwareOk['gpu']>
type GpuProcess = Gpu['processes'][number]

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

/** A figure from a tool's output, units stripped; blank, bracketed (`[N/A]`) or N/A is null. */
export const num = (s: string | undefined): number | null => {
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

/** The `Mem:` row of `free -b`; without an available column, available is total − used. */
export function memoryFromFree(lines: readonly string[] | undefined): Ram {
  const mem = lines?.find((l) => l.startsWith('Mem:'))
  if (!mem) return null
  const [total, used, , , , available] = mem.trim().split(/\s+/).slice(1).map(Number)
  if (total === undefined || !Number.isFinite(total) || used === undefined) return null
  return { total_bytes: total, used_bytes: used, available_bytes: available ?? total - used }
}

/** The root filesystem's row of `df -P -B1 /`. */
export function diskFromDf(lines: readonly string[] | undefined): Disk {
  const dfLine = lines?.filter((l) => !l.startsWith('Filesystem')).at(-1)
  if (!dfLine) return null
  const f = dfLine.trim().split(/\s+/)
  // Filesystem, 1-blocks, Used, Available, Capacity, Mounted on
  const [total, used, avail] = [Number(f[1]), Number(f[2]), Number(f[3])]
  if (![total, used, avail].every(Number.isFinite)) return null
  return { mount: f.slice(5).join(' ') || '/', total_bytes: total, used_bytes: used, available_bytes: avail }
}

/** `nvidia-smi --query-compute-apps=pid,process_name,used_memory` rows; lines without a pid are skipped. */
export function gpuProcesses(lines: readonly string[] | undefined): GpuProcess[] {
  return (lines ?? [])
    .map((l) => l.split(',').map((s) => s.trim()))
    .filter((f) => f.length >= 3 && num(f[0]) !== null)
    .map((f) => ({ pid: num(f[0]) as number, name: f[1] as string, used_bytes: (num(f[2]) ?? 0) * MIB }))
}

interface GpuMemory {
  used: number | null
  total: number | null
  unified: boolean
}

/** GPU memory from the driver's MiB figures, or from the processes and system RAM when it has none. */
function gpuMemory(
  memTotal: string | undefined,
  memUsed: string | undefined,
  processes: readonly GpuProcess[],
  ramTotal: number | null,
): GpuMemory {
  const totalMiB = num(memTotal)
  if (totalMiB === null) {
    // Unified memory (GB10): the driver reports no total; the GPU shares system RAM.
    return { used: processes.reduce((a, p) => a + p.used_bytes, 0), total: ramTotal, unified: true }
  }
  const usedMiB = num(memUsed)
  return { used: usedMiB === null ? null : usedMiB * MIB, total: totalMiB * MIB, unified: false }
}

/**
 * The first GPU of `nvidia-smi --query-gpu=name,utilization.gpu,temperature.gpu,power.draw,memory.total,memory.used`
 * with its compute processes; `unified` when the GPU shares system RAM.
 */
export function gpuFromNvidiaSmi(
  gpuLines: readonly string[] | undefined,
  appLines: readonly string[] | undefined,
  ram: Ram,
): { gpu: Gpu | null; unified: boolean } {
  // Fewer fields: nvidia-smi printed an error instead of a reading.
  const gpuLine = gpuLines?.find((l) => l.split(',').length >= 6)
  if (!gpuLine) return { gpu: null, unified: false }
  const [name, util, temp, power, memTotal, memUsed] = gpuLine.split(',').map((s) => s.trim())
  const processes = gpuProcesses(appLines)
  const { used, total, unified } = gpuMemory(memTotal, memUsed, processes, ram?.total_bytes ?? null)
  const gpu: Gpu = {
    name: name ?? 'GPU',
    utilization_pct: num(util),
    temperature_c: num(temp),
    power_w: num(power),
    memory_used_bytes: used,
    memory_total_bytes: total,
    memory_fraction: used !== null && total ? Math.round((used / total) * 10000) / 10000 : null,
    processes,
  }
  return { gpu, unified }
}

/**
 * A unified-memory node's one pool from `free -b` and the GPU's processes. On GB10 the GPU's
 * allocations are system memory, so `free` counts them as used: in use is total − available, or
 * what the GPU processes hold when a reading is older than theirs (it never shows less). The
 * engines' share is their processes' memory; the rest of what is in use is other processes'.
 */
export function unifiedPool(ram: Ram, processes: readonly GpuProcess[]): MemoryPool | null {
  if (ram === null) return null
  const sum = (ps: readonly GpuProcess[]): number => ps.reduce((a, p) => a + p.used_bytes, 0)
  const engine = sum(processes.filter((p) => p.name.startsWith(ENGINE_PROCESS_PREFIX)))
  const inUse = Math.min(ram.total_bytes, Math.max(ram.total_bytes - ram.available_bytes, sum(processes)))
  return {
    total_bytes: ram.total_bytes,
    engine_bytes: Math.min(engine, inUse),
    other_bytes: inUse - Math.min(engine, inUse),
    free_bytes: ram.total_bytes - inUse,
  }
}

/** The default route's interface (`ip route show default`) and its MAC (`ip -o link show dev …`). */
export function networkFromIp(
  routeLines: readonly string[] | undefined,
  linkLines: readonly string[] | undefined,
): { interface: string | null; mac: string | null } {
  const route = routeLines?.[0] ?? ''
  const iface = /\bdev\s+(\S+)/.exec(route)?.[1] ?? null
  const link = (linkLines ?? []).join(' ')
  const rawMac = /link\/ether\s+([0-9a-fA-F:]{17})/.exec(link)?.[1]
  return { interface: iface, mac: rawMac ? normalizeMac(rawMac) : null }
}

/**
 * The cluster-link address as the launcher's autodiscover.sh picks it: of the net devices on
 * `ibdev2netdev` lines marked `(Up)` (its fifth field) that have an IPv4 address in the
 * `ip -o -f inet addr show` lines, the first without a capital P in its name, else the first;
 * the address without its prefix. Null when there is none.
 */
export function clusterAddress(
  ibLines: readonly string[] | undefined,
  inetLines: readonly string[] | undefined,
): string | null {
  const addresses = new Map<string, string>()
  for (const line of inetLines ?? []) {
    // `5: enp1s0f1np1    inet 192.168.177.11/24 brd … scope global enp1s0f1np1\ …`
    const f = line.trim().split(/\s+/)
    const ip = f[3]?.split('/')[0]
    if (f[2] === 'inet' && f[1] !== undefined && ip !== undefined && isIPv4(ip) && !addresses.has(f[1]))
      addresses.set(f[1], ip)
  }
  const candidates = (ibLines ?? [])
    .filter((l) => l.includes('Up)'))
    .map((l) => l.trim().split(/\s+/)[4])
    .filter((dev): dev is string => dev !== undefined && addresses.has(dev))
  const chosen = candidates.find((dev) => !dev.includes('P')) ?? candidates[0]
  return chosen === undefined ? null : (addresses.get(chosen) ?? null)
}
