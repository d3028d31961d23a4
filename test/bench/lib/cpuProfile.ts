// Reads a V8 CPU profile (`node --cpu-prof`) and says where the busy time went: self time per
// stage of a relayed request, and the top frames, counting only samples inside a time window.
import fs from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Stages of a relayed request, matched on a frame's script and function; the first match wins. */
const STAGES: [string, (url: string, fn: string) => boolean][] = [
  [
    'socket writes and reads (syscalls)',
    (u, f) => u === '' && /^(writev|writeBuffer|write\w*String|readv?|onStreamRead)$/.test(f),
  ],
  [
    'edge: surface, client address, credentials',
    (u) =>
      /http\/(edge|clientAddress|surfaces|requestState|middleware\/(surface|credentials|originGuard))\.ts|core\/(credentials|netAddress|limits|adminToken)\.ts/.test(
        u,
      ),
  ],
  [
    'dispatch: router, route wrapper',
    (u) =>
      /http\/(listen|server|bodyDeadline|respond|middleware\/contractRoutes)\.ts|gateway\/(rawRoute|proxyRoutes)\.ts|node_modules\/(express|router|path-to-regexp|parseurl)\//.test(
        u,
      ),
  ],
  ['body read and JSON check', (u, f) => /http\/body\.ts|gateway\/wire\.ts/.test(u) || (u === '' && f === 'parse')],
  ['upstream client (undici)', (u) => /node_modules\/undici\/|^wasm:/.test(u)],
  ['relay (proxy.ts)', (u) => /gateway\/proxy\.ts/.test(u)],
  ['request log', (u) => /gateway\/requestLog\.ts/.test(u)],
  [
    'usage accounting, key usage, metrics',
    (u) => /gateway\/(usageMeter|keyUsage|consumerKeys)\.ts|src-main\/metrics\/|node_modules\/prom-client\//.test(u),
  ],
  [
    'Node HTTP server: parse request, write response',
    (u, f) => /^node:_http_/.test(u) || f === 'parserOnHeadersComplete',
  ],
  [
    'Node streams, events, timers, buffers',
    (u) =>
      /^node:(events|stream|internal\/(streams|timers|event_target|abort_controller|process\/task_queues)|timers|net|buffer)/.test(
        u,
      ),
  ],
  ['garbage collector', (_u, f) => f === '(garbage collector)'],
]

export interface StageTime {
  readonly stage: string
  readonly ms: number
}

export interface ProfileSummary {
  /** Busy (non-idle) milliseconds inside the window. */
  readonly busyMs: number
  readonly stages: StageTime[]
  readonly top: { frame: string; ms: number }[]
}

/** Self time by stage and the top frames, for samples taken between `fromUs` and `toUs` (CLOCK_MONOTONIC µs). */
export function summarizeProfile(file: string, fromUs: number, toUs: number, topN = 15): ProfileSummary {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0
    t += dt
    if (t < fromUs || t > toUs) continue
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt)
  }
  const stageUs = new Map<string, number>()
  const frameUs = new Map<string, number>()
  let busy = 0
  for (const [id, us] of self) {
    const { functionName: fn, url, lineNumber } = byId.get(id)!.callFrame
    if (fn === '(idle)') continue
    busy += us
    const stage = STAGES.find(([, test]) => test(url, fn))?.[0] ?? 'other (module code, microtasks, natives)'
    stageUs.set(stage, (stageUs.get(stage) ?? 0) + us)
    const frame = `${fn || '(anonymous)'} ${url.replace(/^.*\/(node_modules\/|src-main\/)/, '$1')}:${lineNumber + 1}`
    frameUs.set(frame, (frameUs.get(frame) ?? 0) + us)
  }
  const order = [...STAGES.map(([s]) => s), 'other (module code, microtasks, natives)']
  return {
    busyMs: busy / 1000,
    stages: order.filter((s) => stageUs.has(s)).map((stage) => ({ stage, ms: stageUs.get(stage)! / 1000 })),
    top: [...frameUs]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([frame, us]) => ({ frame, ms: us / 1000 })),
  }
}

/** The main thread's `.cpuprofile` (CPU.<date>.<time>.<pid>.<thread>.<seq>) of the process with `pid`. */
export function profileOf(dir: string, pid: number): string | null {
  const f = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.cpuprofile') && n.includes(`.${pid}.0.`))
    .sort()
    .at(-1)
  return f === undefined ? null : `${dir}/${f}`
}
