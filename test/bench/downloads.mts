// Disk status of 50 catalog models on two sim nodes (warm: pooled connections, one probe command per
// node), target < 1 s; and download progress parsing throughput on the recordings (the current hub
// CLI's Xet bars, rsync --progress) and the older per-file bars, target ≥ 50,000 lines/s on the Xet
// recording: a 1 TB download redraws a few lines a second, so that leaves the event loop idle. The
// sim runs in a child process so its SSH server does not share the measuring event loop. Prints
// figures; asserts nothing.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ModelDef } from '../../src-main/contract/models'
import { systemClock } from '../../src-main/lib/clock'
import { createLogger } from '../../src-main/lib/logger'
import { JobRegistry } from '../../src-main/platform/jobs'
import { WeightsOnDisk } from '../../src-main/models/disk'
import { DownloadProgress } from '../../src-main/models/progress'
import type { CatalogEntry } from '../../src-main/models/types'
import { ConnectivityStore } from '../../src-main/nodes/connectivity'
import { HostKeyStore } from '../../src-main/ssh/hostKeys'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { LineSplitter } from '../../src-main/ssh/lines'
import { SshPool } from '../../src-main/ssh/pool'
import { startSimCluster } from '../sim/cluster'
import { spawnChild } from './lib/child'
import { serveSimToParent, simTargets } from './lib/simChild'

const here = path.dirname(fileURLToPath(import.meta.url))
const MODELS = 50
const repos = Array.from({ length: MODELS }, (_, i) => `bench/model-${i}`)

if (process.argv[2] === 'sim') {
  // Half the models cached on both nodes, the rest absent: the probe sizes some and skips others.
  const cached = repos.filter((_, i) => i % 2 === 0)
  const sim = await startSimCluster({
    authorizedKeys: [process.argv[3] as string],
    cachedModels: { node1: cached, node2: cached },
  })
  serveSimToParent(sim)
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-dl-'))
  const key = ensureServiceKey(path.join(dir, 'ssh'))
  const { proc, info } = await spawnChild(path.join(here, 'downloads.mts'), ['sim', key.publicKey], {
    cwd: path.join(here, '..', '..'),
  })
  const logger = createLogger({ level: 'error' })
  const targets = simTargets(info)
  const pool = new SshPool({
    privateKey: key.privateKey,
    hostKeys: new HostKeyStore(path.join(dir, 'kh.json'), Date.now),
    clock: systemClock,
    logger,
  })
  const connectivity = new ConnectivityStore(path.join(dir, 'conn.json'), systemClock, logger)
  const entries: CatalogEntry[] = repos.map((repo, i) => ({
    def: { key: `m${i}`, name: repo, repo, engine_args: [], mode: i % 3 === 0 ? 'solo' : 'cluster' } as ModelDef,
    tags: ['bundled'],
    bundled: true,
    effectiveKnobs: {},
    launchArgs: [],
  }))
  const disk = new WeightsOnDisk({
    catalog: { list: () => entries, get: (k) => entries.find((e) => e.def.key === k)!, onChange: () => undefined },
    nodes: { pool, targets, connectivity },
    jobs: new JobRegistry(systemClock, logger.redactor),
    swap: { loaded: () => null, busy: () => false },
    logger,
    clock: systemClock,
  })

  const pct = (xs: number[], p: number): number => {
    const s = [...xs].sort((a, b) => a - b)
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
  }
  const first = await disk.status() // trust host keys, open connections
  const present = first.models.filter((m) => m.on_disk).length
  const warm: number[] = []
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now()
    await disk.status()
    warm.push(performance.now() - t0)
  }
  console.log(`disk status, ${MODELS} models (${present} on disk) on two sim nodes, one probe per node (ms)`)
  console.log(`  warm  n=${warm.length}  p50 ${pct(warm, 50).toFixed(1)}  p95 ${pct(warm, 95).toFixed(1)}`)
  console.log(`  target warm < 1000 ms: ${pct(warm, 95) < 1000 ? 'met' : 'NOT met'}`)
  await pool.close()
  proc.stdin?.end()
  await new Promise((r) => proc.once('exit', r))

  const fixtures = path.join(here, '..', 'fixtures')
  const TARGET_LINES_PER_S = 50_000
  for (const name of [
    'downloads/hf-xet-progress.raw.txt',
    'downloads/rsync-progress.raw.txt',
    'models/hub-download.raw.txt',
  ]) {
    const text = fs.readFileSync(path.join(fixtures, name), 'utf8')
    const rounds = 2000
    let lines = 0
    const t0 = performance.now()
    for (let r = 0; r < rounds; r++) {
      const p = new DownloadProgress()
      const split = new LineSplitter((line) => {
        lines++
        p.feed(line)
      })
      // Chunks the size an SSH channel delivers a busy bar in.
      for (let i = 0; i < text.length; i += 256) split.push(text.slice(i, i + 256))
      split.end()
    }
    const s = (performance.now() - t0) / 1000
    const mb = (Buffer.byteLength(text) * rounds) / 1e6
    const perSecond = lines / s
    console.log(
      `progress parsing, ${name}: ${(mb / s).toFixed(1)} MB of output/s, ${Math.round(perSecond).toLocaleString('en')} lines/s`,
    )
    if (name.includes('xet'))
      console.log(
        `  target ≥ ${TARGET_LINES_PER_S.toLocaleString('en')} lines/s on the Xet recording: ${perSecond >= TARGET_LINES_PER_S ? 'met' : 'NOT met'}`,
      )
  }
  fs.rmSync(dir, { recursive: true, force: true })
}
