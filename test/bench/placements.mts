// Placements bench (issue 34): orchestration overhead of a placement job, excluding the load
// delay — from place() to ready, less the fake engine's configured load delay — and the time a
// stop takes, on the placement rig (a recording fake SSH pool playing the launcher, loopback
// engines answering /v1/models; test/helpers/placementRig.ts). pollMs 50 as a swap would poll in a
// slow test. Targets: median overhead ≤ 250 ms, median stop ≤ 100 ms. Prints figures, asserts nothing.
// Run: npx tsx test/bench/placements.mts
import { performance } from 'node:perf_hooks'

// The sources are CommonJS under tsx: named imports come through dynamic import (as in licensing.mts).
const { placementRig } = await import('../helpers/placementRig')

const RUNS = Number(process.env.RUNS ?? 8)
const LOAD_MS = Number(process.env.LOAD_MS ?? 400)
const POLL_MS = 50
const PLACE_TARGET_MS = 250
const STOP_TARGET_MS = 100

type Nodes = ('node1' | 'node2' | 'node3' | 'node4')[]

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const max = (xs: number[]): number => Math.max(...xs)

const rig = await placementRig({ loadDelayMs: LOAD_MS, pollMs: POLL_MS })
try {
  const layouts: [string, Nodes][] = [
    ['solo on node3', ['node3']],
    ['tensor parallel 2 on node3+node4', ['node3', 'node4']],
  ]
  for (const [label, nodes] of layouts) {
    const overheads: number[] = []
    const stops: number[] = []
    for (let i = 0; i < RUNS; i++) {
      const key = i % 2 === 0 ? 'big' : 'coder'
      const t0 = performance.now()
      const { job_id, id } = await rig.placements.place(key, nodes, { displace: true })
      const placed = await rig.jobs.wait(job_id)
      const total = performance.now() - t0
      if (placed.state !== 'succeeded') throw new Error(`placing ${key} on ${id}: ${placed.error ?? placed.state}`)
      overheads.push(total - LOAD_MS)
      const s0 = performance.now()
      const stop = await rig.placements.stopPlacement(id)
      const stopped = await rig.jobs.wait(stop.job_id)
      if (stopped.state !== 'succeeded') throw new Error(`stopping ${id}: ${stopped.error ?? stopped.state}`)
      stops.push(performance.now() - s0)
    }
    const placeMet = median(overheads) <= PLACE_TARGET_MS
    const stopMet = median(stops) <= STOP_TARGET_MS
    console.log(
      `place ${label} (load delay of ${LOAD_MS} ms excluded, poll ${POLL_MS} ms): overhead median ` +
        `${median(overheads).toFixed(0)} ms, max ${max(overheads).toFixed(0)} ms over ${RUNS} — ` +
        `${placeMet ? 'met' : 'not met'} (target ≤ ${PLACE_TARGET_MS} ms)`,
    )
    console.log(
      `stop ${label}: median ${median(stops).toFixed(0)} ms, max ${max(stops).toFixed(0)} ms over ${RUNS} — ` +
        `${stopMet ? 'met' : 'not met'} (target ≤ ${STOP_TARGET_MS} ms)`,
    )
  }
} finally {
  await rig.close()
}
