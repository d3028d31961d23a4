// Hardware snapshot of both nodes against the sim: warm (pooled connections, one channel per probe)
// versus cold (a new SSH connection per command). The sim runs in a child process so its SSH
// server does not share the measuring event loop. Prints p50/p95 in ms; target: warm p50 < 50 ms.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { systemClock } from '../../src-main/lib/clock'
import { createLogger } from '../../src-main/lib/logger'
import { ConnectivityStore } from '../../src-main/nodes/connectivity'
import { HardwareService } from '../../src-main/nodes/hardware'
import { HostKeyStore } from '../../src-main/ssh/hostKeys'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { SshPool } from '../../src-main/ssh/pool'
import { startSimCluster } from '../sim/cluster'
import { spawnChild } from './lib/child'
import { serveSimToParent, simTargets } from './lib/simChild'

const here = path.dirname(fileURLToPath(import.meta.url))

if (process.argv[2] === 'sim') {
  const sim = await startSimCluster({
    authorizedKeys: [process.argv[3] as string],
    containers: { node1: [{ name: 'vllm_node', image: 'vllm-node', command: ['vllm', 'serve', 'bench/model'] }] },
  })
  serveSimToParent(sim)
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-hw-'))
  const key = ensureServiceKey(path.join(dir, 'ssh'))
  const { proc, info } = await spawnChild(path.join(here, 'hardware.mts'), ['sim', key.publicKey], {
    cwd: path.join(here, '..', '..'),
  })
  const logger = createLogger({ level: 'error' })
  const targets = simTargets(info)

  const measure = async (reuse: boolean, rounds: number): Promise<number[]> => {
    const pool = new SshPool({
      privateKey: key.privateKey,
      hostKeys: new HostKeyStore(path.join(dir, `kh-${reuse}.json`), Date.now),
      clock: systemClock,
      logger,
      reuse,
    })
    const store = new ConnectivityStore(path.join(dir, `conn-${reuse}.json`), systemClock, logger)
    const hw = new HardwareService({ pool, connectivity: store, clock: systemClock, logger, targets })
    await hw.snapshot({ fresh: true }) // trust host keys, open connections
    const times: number[] = []
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now()
      const snap = await hw.snapshot({ fresh: true })
      times.push(performance.now() - t0)
      if (snap.node1.status !== 'ok' || snap.node2.status !== 'ok') throw new Error('a sim node did not answer')
    }
    await pool.close()
    return times
  }

  const pct = (xs: number[], p: number): number => {
    const s = [...xs].sort((a, b) => a - b)
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
  }
  const warm = await measure(true, 60)
  const cold = await measure(false, 30)
  console.log('hardware snapshot, both nodes in parallel, against the sim (ms)')
  console.log(
    `  warm (pooled)          n=${warm.length}  p50 ${pct(warm, 50).toFixed(1)}  p95 ${pct(warm, 95).toFixed(1)}`,
  )
  console.log(
    `  cold (new connection)  n=${cold.length}  p50 ${pct(cold, 50).toFixed(1)}  p95 ${pct(cold, 95).toFixed(1)}`,
  )
  console.log(`  target warm p50 < 50 ms: ${pct(warm, 50) < 50 ? 'met' : 'NOT met'}`)
  proc.stdin?.end()
  await new Promise((r) => proc.once('exit', r))
  fs.rmSync(dir, { recursive: true, force: true })
}
