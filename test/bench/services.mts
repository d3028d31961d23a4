// Services bench (issue 10): GET /api/services with llm, asr, tts and 10 custom services on the sim
// (real SSH, docker inspect, HTTP health checks). Target: warm p50 < 100 ms. Prints figures, asserts
// nothing. Run: npx tsx test/bench/services.mts
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import YAML from 'yaml'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon } from '../helpers/daemon'
import { startFullSim } from '../sim/full'

const CUSTOM = 10
const RUNS = Number(process.env.RUNS ?? 30)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bench-services-'))
const key = ensureServiceKey(path.join(dataDir, 'ssh'))
const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
// One small health endpoint stands in for every custom service (each answers on its own port).
const servers: http.Server[] = []
const customs = []
for (let i = 0; i < CUSTOM; i++) {
  const server = http.createServer((_req, res) => res.end('{"data":[{"id":"custom"}]}'))
  // On node2's own address, where its containers' ports are.
  await new Promise<void>((r) => server.listen(0, sim.cluster.node2.address, r))
  servers.push(server)
  const port = (server.address() as AddressInfo).port
  sim.cluster.node2.runLocal(
    `docker run -d --name custom-${i} --gpus all -p ${port}:9000 nvcr.io/sim/custom:${i} >/dev/null`,
  )
  customs.push({ name: `custom-${i}`, node: 'node2', container: `custom-${i}`, port })
}
const overrides = path.join(dataDir, 'services-overrides.yaml')
fs.writeFileSync(overrides, YAML.stringify({ services: customs }))
const daemon = await startDaemon({
  env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SERVICES_OVERRIDES: overrides },
  dataDir,
})
try {
  const times: number[] = []
  let count = 0
  let healthy = 0
  for (let i = 0; i < RUNS + 1; i++) {
    const t0 = performance.now()
    const res = await daemon.admin('/api/services')
    const body = (await res.json()) as { services: { label: string }[] }
    const ms = performance.now() - t0
    if (i === 0) console.log(`services: cold ${ms.toFixed(1)} ms`)
    else times.push(ms)
    count = body.services.length
    healthy = body.services.filter((s) => s.label === 'Healthy').length
  }
  const sorted = [...times].sort((a, b) => a - b)
  const p = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  console.log(`services: ${count} listed (${CUSTOM} custom, ${healthy} Healthy), ${RUNS} warm runs`)
  console.log(
    `  warm p50 ${p(0.5).toFixed(1)} ms, p90 ${p(0.9).toFixed(1)} ms, worst ${p(1).toFixed(1)} ms (target p50 < 100 ms)`,
  )
} finally {
  await daemon.stop()
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await sim.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
