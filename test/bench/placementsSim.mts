// Placements bench on the simulator (issue 34): the orchestration overhead of a placement job over
// real SSH on a three-node sim, each node with a launcher — POST /api/placements to the job's
// success, less the sim engine's configured load delay (validation in a throwaway container, the
// stop of what it displaces, the launcher, polling until the model answers) — and the wall time
// of DELETE /api/placements/:id to the job's success. Targets on 2 cores: median overhead ≤ 1.5 s,
// median stop ≤ 1 s; each layout's first round (SSH connections opening) is not counted. Prints
// figures, asserts nothing. Run: npx tsx test/bench/placementsSim.mts
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'

const RUNS = Number(process.env.RUNS ?? 6)
const LOAD_MS = Number(process.env.LOAD_MS ?? 400)
const PLACE_TARGET_MS = 1500
const STOP_TARGET_MS = 1000

type Nodes = ('node2' | 'node3')[]

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const max = (xs: number[]): number => Math.max(...xs)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-placements-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({
  authorizedKeys: [key.publicKey],
  nodeCount: 3,
  launcherNodes: ['node1', 'node2', 'node3'],
  llmModel: 'sim/first',
})
const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
const post = async (pathname: string, body: unknown, method = 'POST'): Promise<{ job_id: string }> => {
  const res = await daemon.admin(pathname, { method, ...(body === null ? {} : { body: JSON.stringify(body) }) })
  const out = (await res.json()) as { job_id: string; detail?: string }
  if (res.status !== 200) throw new Error(`${method} ${pathname}: ${res.status} ${out.detail ?? ''}`)
  return out
}
/** When each phase of the running job began (swap.state events), to say where the overhead goes. */
const phases: { phase: string; at: number }[] = []
const unsubscribe = daemon.core.events.subscribe((ev) => {
  if (ev.name === 'swap.state') phases.push({ phase: String(ev.data.phase), at: performance.now() })
})
/** Milliseconds from POST to the first phase, and spent in each phase until ready. */
const phaseSpans = (t0: number): Record<string, number> => {
  const spans: Record<string, number> = { accepting: (phases[0]?.at ?? t0) - t0 }
  for (let i = 0; i + 1 < phases.length; i++) {
    const p = phases[i] as { phase: string; at: number }
    spans[p.phase] = (spans[p.phase] ?? 0) + ((phases[i + 1] as { at: number }).at - p.at)
  }
  return spans
}
try {
  for (const k of ['big', 'coder'])
    await post('/api/models', { key: k, name: k, repo: `sim/${k}` }).catch(() => undefined)
  // The cluster-link addresses a tensor-parallel launch names.
  await daemon.admin('/api/hardware?fresh=true')
  for (const node of ['node2', 'node3'] as const) sim.engine(node).setLoadDelay(LOAD_MS)
  const layouts: [string, Nodes][] = [
    ['solo on node3', ['node3']],
    ['tensor parallel 2 on node2+node3', ['node2', 'node3']],
  ]
  for (const [label, nodes] of layouts) {
    const overheads: number[] = []
    const stops: number[] = []
    const spans: Record<string, number>[] = []
    // The first round of each layout opens its SSH connections and reads its launchers: not counted.
    for (let i = -1; i < RUNS; i++) {
      const model = i % 2 === 0 ? 'big' : 'coder'
      phases.length = 0
      const t0 = performance.now()
      const placed = await daemon.core.jobs.wait((await post('/api/placements', { key: model, nodes })).job_id)
      const total = performance.now() - t0
      if (placed.state !== 'succeeded') throw new Error(`placing ${model} (${label}): ${placed.error ?? placed.state}`)
      if (i >= 0) overheads.push(total - LOAD_MS)
      if (i >= 0) spans.push(phaseSpans(t0))
      const s0 = performance.now()
      const stopped = await daemon.core.jobs.wait(
        (await post(`/api/placements/${nodes.join('+')}`, null, 'DELETE')).job_id,
      )
      if (stopped.state !== 'succeeded') throw new Error(`stopping ${label}: ${stopped.error ?? stopped.state}`)
      if (i >= 0) stops.push(performance.now() - s0)
    }
    const placeMet = median(overheads) <= PLACE_TARGET_MS
    const stopMet = median(stops) <= STOP_TARGET_MS
    console.log(
      `place ${label} on the sim over SSH (load delay of ${LOAD_MS} ms excluded): overhead median ` +
        `${median(overheads).toFixed(0)} ms, max ${max(overheads).toFixed(0)} ms over ${RUNS} — ` +
        `${placeMet ? 'met' : 'not met'} (target ≤ ${PLACE_TARGET_MS} ms on ${os.availableParallelism()} cores)`,
    )
    const names = Object.keys(spans[0] ?? {})
    console.log(
      `  median per phase: ${names.map((n) => `${n} ${median(spans.map((x) => x[n] ?? 0)).toFixed(0)} ms`).join(', ')}` +
        ` (loading includes the ${LOAD_MS} ms load delay)`,
    )
    console.log(
      `stop ${label}: median ${median(stops).toFixed(0)} ms, max ${max(stops).toFixed(0)} ms over ${RUNS} — ` +
        `${stopMet ? 'met' : 'not met'} (target ≤ ${STOP_TARGET_MS} ms)`,
    )
  }
} finally {
  unsubscribe()
  await daemon.stop()
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
