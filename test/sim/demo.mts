/**
 * `npm run demo`: the simulated cluster (SSH nodes plus llm, asr and tts fakes) and the BUILT
 * headless daemon configured for it. Prints the dashboard URL and the admin token; Ctrl-C stops
 * both. Data lives in .tandem-data/demo (DEMO_DATA_DIR) and is kept between runs: the token, the
 * history, saved settings and placements carry over, and the demo says so at start. DEMO_FRESH=1
 * empties it first (only a directory a demo made). The asr container starts with the speech
 * overlays applied, as on a cluster after its set-up; `upgrade asr` brings the image's own back.
 *
 *   DEMO_PORT (default 9999), DEMO_BIND (default 127.0.0.1), DEMO_DATA_DIR, DEMO_LOAD_MS (a swap's load, 8000),
 *   DEMO_NODES (2 to 8 simulated nodes, default 2; node3 and past reach the daemon through NODES),
 *   DEMO_PLACEMENTS (one, or two: after start a second bundled model is placed solo on node3, or node2
 *   with two nodes, through POST /api/placements), DEMO_FRESH (1: start from an empty data directory),
 *   DEMO_DOWNLOAD_MBPS (the simulated network's MB/s for downloads, default 200; 0 replays them fast)
 *
 * A busy DEMO_PORT is refused before anything starts. The shop is seeded on every start; buying
 * in it goes through the fake BTCPay checkout page, whose "Pay" and "Expire" buttons send the
 * same signed webhooks a real BTCPay Server would.
 *
 * Faults can be switched from the terminal: `down node2`, `up node2`, `hang node1`, `slow node1 800`,
 * `fail node1 nvidia-smi`, `clear node1`,
 * `stop llm`, `start llm`, `fault asr error500|hang|slow|refused|none`, `wedge asr` (500 cudaErrorUnknown until a
 * container restart), `loadfail <repo>|*|none`, `launcher early|mid` (reset node1's launcher checkout to that
 * generation: the early-2026 scripts have no --solo and stop the cluster after exec; an update brings mid
 * back), `upgrade asr` (the image's own modules replace the overlays, and asr restarts), `help`.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { applyShippedOverlays, upgradeContainer } from './asrOverlays'
import { demoDataLines, demoDoctorCommand, demoFresh, prepareDemoData, writeDemoEnv } from './demoData'
import { RESTART_LIMITS } from '../../src-main/platform/restartLimits'
import { SIM_CONTAINERS, startFullSim } from './full'
import { startLicensingSim } from '../fakes/licensingDemo'
import { startDemoVectors } from './demoVectors'
import {
  DEMO_LOADED_REPO,
  DEMO_SECOND_KEY,
  demoCachedModels,
  demoDownloadMbps,
  demoNodeCount,
  demoPlacements,
} from './demoState'
import { portProblem } from './portCheck'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const entry = path.join(repo, 'out', 'main', 'index.js')
if (!fs.existsSync(entry)) {
  console.error(`${entry} is missing: run \`npm run build\` first (npm run demo does both).`)
  process.exit(1)
}
const dataDir = path.resolve(process.env.DEMO_DATA_DIR ?? path.join(repo, '.tandem-data', 'demo'))
const port = Number(process.env.DEMO_PORT ?? 9999)
const bind = process.env.DEMO_BIND ?? '127.0.0.1'
const nodeCount = demoNodeCount(process.env.DEMO_NODES)
const placements = demoPlacements(process.env.DEMO_PLACEMENTS, typeof nodeCount === 'number' ? nodeCount : 2)
const fresh = demoFresh(process.env.DEMO_FRESH)
const downloadMbps = demoDownloadMbps(process.env.DEMO_DOWNLOAD_MBPS)
for (const problem of [nodeCount, placements, fresh, downloadMbps])
  if (typeof problem === 'string') {
    console.error(`demo: ${problem}`)
    process.exit(1)
  }
const nodes = nodeCount as number
const secondOn = (placements as Exclude<typeof placements, string>).second
// Before anything starts: a busy port would otherwise seed whichever process owns it.
const busy = await portProblem(port, bind)
if (busy) {
  console.error(`demo: ${busy}`)
  process.exit(1)
}
// Only now, with the port free: a DEMO_FRESH=1 beside a running demo must not empty its state.
const data = prepareDemoData(dataDir, fresh === true)
if (typeof data === 'string') {
  console.error(`demo: ${data}`)
  process.exit(1)
}

// The daemon's SSH key is made before it starts (it reuses it), so the nodes can trust it.
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
// A sim restarted on new ephemeral ports presents new host keys: forget the old demo ones.
fs.rmSync(path.join(dataDir, 'known_hosts.json'), { force: true })

// The llm starts with a bundled catalog model loaded; a swap takes DEMO_LOAD_MS to load (phases, log, ETA show).
// The bundled models' configs and real-size (sparse) weights are in the hub caches, so fit and disk status show.
// Every node has a launcher checkout: any of them can head a placement.
const sim = await startFullSim({
  authorizedKeys: [key.publicKey],
  launcherBehind: 2,
  llmModel: DEMO_LOADED_REPO,
  nodeCount: nodes,
  launcherNodes: Array.from({ length: nodes }, (_, i) => `node${i + 1}` as const),
  cachedModels: demoCachedModels(nodes, secondOn),
})
for (const n of sim.cluster.nodes) sim.engine(n.name).setLoadDelay(Number(process.env.DEMO_LOAD_MS ?? 8000))
// asr as a set-up cluster runs it: the speech overlays applied (Services shows them in sync).
applyShippedOverlays(sim.cluster.node2)
// The node addresses and ports of this run, for `tandem doctor` against the demo.
writeDemoEnv(dataDir, sim.env())
// Downloads and copies move at DEMO_DOWNLOAD_MBPS (the shims' download_mbps knob), so their progress is seen.
for (const n of sim.cluster.nodes) fs.writeFileSync(path.join(n.state, 'download_mbps'), String(downloadMbps))
// Payment providers and exchange-rate sources on loopback: the demo never reaches the internet.
const shop = await startLicensingSim()
// Embeddings and a vector store (seeded collection `tandem-docs`): /v1/embeddings and search work too.
const vectors = await startDemoVectors()
for (const n of sim.cluster.nodes) console.log(`sim: ${n.name} ssh ${n.address}:${n.port} (${n.opts.hostname})`)
console.log(
  `sim: llm ${sim.llm.url} (each node's engine on its own address, same port)  asr ${sim.asr.url}  tts ${sim.tts.url}`,
)

// Gentle CPU load drift so the cluster view has something to show.
const drift = setInterval(() => {
  for (const n of sim.cluster.nodes) {
    const l1 = (0.3 + Math.random() * 2.5).toFixed(2)
    fs.writeFileSync(
      path.join(n.state, 'load'),
      `${l1} ${(Number(l1) * 0.8).toFixed(2)} ${(Number(l1) * 0.6).toFixed(2)}`,
    )
  }
}, 8000)

const daemon = spawn(process.execPath, [entry, '--headless'], {
  cwd: repo,
  stdio: ['ignore', 'inherit', 'inherit'],
  env: {
    ...process.env,
    ...sim.env(),
    ...shop.env,
    ...vectors.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    BIND: bind,
    // Wake-on-LAN in the demo never leaves this machine.
    WOL_BROADCAST: '127.0.0.1',
    MONITOR_INTERVAL_S: process.env.MONITOR_INTERVAL_S ?? '15',
  },
})

let stopping = false
async function stop(code: number): Promise<void> {
  if (stopping) return
  stopping = true
  clearInterval(drift)
  if (daemon.exitCode === null) {
    daemon.kill('SIGTERM')
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        daemon.kill('SIGKILL')
        resolve()
      }, 5000)
      daemon.once('exit', () => {
        clearTimeout(t)
        resolve()
      })
    })
  }
  await Promise.all([sim.close(), shop.close(), vectors.close()])
  process.exit(code)
}
process.on('SIGINT', () => void stop(0))
process.on('SIGTERM', () => void stop(0))
daemon.on('exit', (code) => {
  if (!stopping) {
    console.error(`daemon exited (${code}); stopping the sim`)
    void stop(code ?? 1)
  }
})

const url = `http://${bind === '0.0.0.0' ? '127.0.0.1' : bind}:${port}`
let up = false
for (let i = 0; i < 100 && !up; i++) {
  try {
    up = (await fetch(`${url}/api/health`)).ok
  } catch {
    // not up yet
  }
  if (!up) await new Promise((r) => setTimeout(r, 200))
}
if (!up) {
  console.error(`demo: the daemon did not answer on ${url} within 20 s; stopping.`)
  await stop(1)
}
const tokenFile = path.join(dataDir, 'admin-token')
const token =
  process.env.ADMIN_TOKEN ??
  (fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : '(see the daemon log)')
try {
  await shop.seed(url, token)
} catch (err) {
  console.error(`demo: seeding the shop failed: ${(err as Error).message}`)
}
console.log('')
console.log(`  Tandem demo is running.`)
console.log(`  Dashboard:   ${url}/`)
console.log(`  Admin token: ${token}`)
// The README's and docs/demo.md's curl lines use $TANDEM, so they work whatever DEMO_PORT is.
console.log(`  For curl:    export TANDEM=${url}`)
for (const line of demoDataLines(data)) console.log(line)
console.log(`  Doctor:      ${demoDoctorCommand(dataDir)}`)
console.log('')
console.log(`  Shop:        ${url}/buy/notes   (also ${url}/buy/studio, priced in dollars)`)
console.log(
  `  API access:  ${url}/buy/cluster-api   (a gateway key with 2,000 tokens a month; 2,000 more from /recover)`,
)
console.log('  To buy:      pick a tier, "Continue to payment", then on the demo BTCPay checkout press "Pay"')
console.log('               (or "Expire" to see a lapsed invoice). You land on the thank-you page with')
console.log(`               your license key; it validates at POST ${url}/v1/validate.`)
console.log(`  Lost key:    ${url}/recover      Discount code to try: LAUNCH20`)
console.log('  Ctrl-C stops the daemon and the simulated cluster.')
console.log('')
if (secondOn !== null) await placeSecond(url, token, secondOn)

/** DEMO_PLACEMENTS=two: the second model placed solo through the real API (the job runs on in the daemon). */
async function placeSecond(base: string, admin: string, on: string): Promise<void> {
  try {
    const res = await fetch(`${base}/api/placements`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: DEMO_SECOND_KEY, nodes: [on] }),
    })
    const body = (await res.json().catch(() => null)) as { job_id?: string; detail?: string } | null
    if (res.ok)
      console.log(`  Placements:  placing ${DEMO_SECOND_KEY} solo on ${on} (job ${body?.job_id ?? '?'}); see Cluster`)
    else
      console.log(
        `  Placements:  placing ${DEMO_SECOND_KEY} on ${on} was refused (${res.status}): ${body?.detail ?? ''}`,
      )
  } catch (err) {
    console.log(`  Placements:  placing ${DEMO_SECOND_KEY} on ${on} failed: ${(err as Error).message}`)
  }
  console.log('')
}

const fakes = { llm: sim.llm, asr: sim.asr, tts: sim.tts } as const
const containers = { llm: ['node1', 'vllm_node'], asr: ['node2', 'asr'], tts: ['node2', 'tts'] } as const
const HELP =
  'commands: down|up|hang|reboot <node>, slow <node> <ms>, fail <node> <text>, clear <node>, stop|start|restart <llm|asr|tts>, fault <llm|asr|tts> <error500|hang|slow|reset|refused|none>, wedge asr, upgrade asr, loadfail|crashloop <repo|*|none>, launcher <early|mid>'
/** How long a `reboot` keeps a node away. */
const REBOOT_MS = 5_000
readline.createInterface({ input: process.stdin }).on('line', (raw) => {
  if (raw.trim() === '') return
  const [cmd, a, b] = raw.trim().split(/\s+/)
  const node = sim.cluster.nodes.find((n) => n.name === a) ?? null
  const run = async (): Promise<string> => {
    if ((cmd === 'down' || cmd === 'up' || cmd === 'hang') && node) {
      await node[cmd]()
      return `${a} ${cmd}`
    }
    if (cmd === 'reboot' && node) {
      // The power goes: the engine's container stops with it (the launcher's containers do not come
      // back by themselves), SSH goes away, and the node answers again a few seconds later.
      node.runLocal(`docker stop ${SIM_CONTAINERS.llm}`)
      await node.down()
      setTimeout(() => {
        void node.up().then(() => console.log(`sim: ${a} is back (Tandem brings its placement back by itself)`))
      }, REBOOT_MS).unref()
      return `${a} rebooting: its engine stopped, back in ${REBOOT_MS / 1000} s`
    }
    if (cmd === 'fail' && node && b) {
      node.failCommand(b, 1, `simulated failure of a command containing ${JSON.stringify(b)}`)
      return `${a}: commands containing ${JSON.stringify(b)} now fail`
    }
    if (cmd === 'clear' && node) {
      node.clearFaults()
      return `${a}: faults cleared`
    }
    if (cmd === 'slow' && node) {
      node.setSlow(Number(b ?? 0))
      return `${a} slow ${b} ms`
    }
    if ((cmd === 'stop' || cmd === 'start' || cmd === 'restart') && a && a in containers) {
      const [n, c] = containers[a as keyof typeof containers]
      const r = sim.cluster[n].runLocal(`docker ${cmd} ${c}`)
      return r.code === 0 ? `docker ${cmd} ${c}: done` : r.stderr.trim()
    }
    if (cmd === 'launcher' && (a === 'early' || a === 'mid')) {
      sim.cluster.setLauncherGeneration(a)
      return `node1's launcher checkout is now the ${a}-2026 generation, commit ${sim.cluster.launcherCommits[a].slice(0, 7)}`
    }
    if (cmd === 'crashloop' && a) {
      for (const n of sim.cluster.nodes) sim.engine(n.name).failLoads(a === 'none' ? null : a)
      return a === 'none'
        ? 'llm: loads succeed again (press Retry on a failed placement)'
        : `llm: ${a} now crashes on every load; reboot its node to see recovery stop after ${RESTART_LIMITS.cap} attempts`
    }
    if (cmd === 'loadfail' && a) {
      for (const n of sim.cluster.nodes) sim.engine(n.name).failLoads(a === 'none' ? null : a)
      return a === 'none' ? 'llm: loads succeed again' : `llm: loads of ${a} now fail (a swap rolls back)`
    }
    if (cmd === 'upgrade' && a === 'asr') {
      upgradeContainer(sim.cluster.node2)
      return "asr upgraded: the image's own modules replace the overlays (Services: Check again, then Reapply patches)"
    }
    if (cmd === 'wedge' && a === 'asr') {
      sim.asr.wedge()
      return 'asr wedged: transcriptions answer 500 cudaErrorUnknown until its container restarts'
    }
    if (cmd === 'fault' && a && a in fakes && b) {
      // error500 is an HTTP 500 and nothing more (a plain message): `wedge asr` is the wedge.
      const fault = b === 'error500' ? { kind: 'error500' as const, message: 'Internal Server Error' } : (b as 'none')
      await fakes[a as keyof typeof fakes].setFault(fault)
      return `${a} fault ${b}`
    }
    return HELP
  }
  run().then(
    (msg) => console.log(`sim: ${msg}`),
    (err: Error) => console.log(`sim: ${err.message}`),
  )
})
console.log(`  (type "help" for simulated faults)`)
