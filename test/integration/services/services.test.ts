import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import YAML from 'yaml'
import type { ServiceRecord } from '../../../src-main/contract/services'
import type { ModelsModule } from '../../../src-main/models/module'
import type { ServicesModule } from '../../../src-main/services/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** Services (spec 1, 4.5): list and labels, actions, logs, custom services and removal, on the sim. */
describe('services on the sim', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let overrides: string

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const list = async (): Promise<Record<string, ServiceRecord>> => {
    const r = await json(await daemon.admin('/api/services'))
    expect(r.status).toBe(200)
    return Object.fromEntries((r.body.services as ServiceRecord[]).map((s) => [s.name, s]))
  }
  const post = (p: string) => daemon.admin(p, { method: 'POST' })
  const servicesModule = () => daemon.core.modules.find((m) => m.name === 'services') as unknown as ServicesModule

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-services-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    overrides = path.join(dataDir, 'services-overrides.yaml')
    fs.writeFileSync(
      overrides,
      YAML.stringify({
        services: [
          { name: 'whisper', node: 'node2', container: 'whisper', port: 9, image: 'ghcr.io/sim/whisper:1' },
          { name: 'broken', node: 'node2', container: 'bad;name', port: 9 },
          { name: 'asr', node: 'node2', container: 'asr2', port: 9 },
        ],
      }),
    )
    daemon = await startDaemon({
      env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SERVICES_OVERRIDES: overrides },
      dataDir,
    })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('lists llm, asr, tts and the valid custom services, skipping bad entries with a warning', async () => {
    const s = await list()
    expect(Object.keys(s)).toEqual(['llm', 'asr', 'tts', 'whisper'])
    expect(s.asr).toMatchObject({ label: 'Healthy', container_state: 'running', custom: false, node: 'node2' })
    expect(s.llm).toMatchObject({ label: 'Healthy', model: 'sim/first', node: 'node1' })
    // No such container on node2: not running, not answering.
    expect(s.whisper).toMatchObject({ custom: true, container_state: 'missing', label: 'Unhealthy' })
    expect(s.asr!.recent_changes.at(-1)).toMatchObject({ from: null, to: 'Healthy' })
    const warnings = daemon.logs.lines.filter((l) => l.includes('custom service entry skipped'))
    expect(warnings).toHaveLength(2)
  })

  it('labels an asr answering HTTP 500 right after a start Unhealthy, not Starting', async () => {
    await sim.asr.setFault('error500')
    try {
      const s = await list()
      expect(s.asr).toMatchObject({ container_state: 'running', http_ok: false, label: 'Unhealthy' })
      expect(s.asr!.recent_changes.at(-1)).toMatchObject({ from: 'Healthy', to: 'Unhealthy' })
    } finally {
      await sim.asr.setFault('none')
    }
  })

  it('restarts, stops and starts a container over SSH, counting restarts and labelling Stopped', async () => {
    const before = (await list()).tts!.restart_count ?? 0
    const r = await json(await post('/api/services/tts/restart'))
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ name: 'tts', action: 'restart', ok: true, container_state: 'running' })
    expect(sim.cluster.node2.commands).toContain("docker restart 'tts'")
    expect((await list()).tts!.restart_count).toBe(before + 1)

    expect((await json(await post('/api/services/tts/stop'))).body).toMatchObject({ container_state: 'exited' })
    expect((await list()).tts).toMatchObject({ label: 'Stopped', container_state: 'exited' })
    expect((await json(await post('/api/services/tts/start'))).body).toMatchObject({ ok: true })
    expect((await list()).tts!.label).toBe('Healthy')
  })

  it('shows a container that exits at start (the sim crash switch): Stopped, restarts counted, its log', async () => {
    const crash = path.join(sim.cluster.node2.state, 'docker', 'crash')
    fs.mkdirSync(crash, { recursive: true })
    fs.writeFileSync(path.join(crash, 'whisper'), '3')
    try {
      sim.cluster.node2.runLocal("docker run -d --name whisper 'ghcr.io/sim/whisper:1' >/dev/null")
      servicesModule().manager.invalidate()
      expect((await list()).whisper).toMatchObject({ label: 'Stopped', container_state: 'exited', restart_count: 1 })
      const r = await json(await post('/api/services/whisper/restart'))
      expect(r.body).toMatchObject({ ok: true, container_state: 'exited' })
      expect((await list()).whisper!.restart_count).toBe(3)
      const logs = await json(await daemon.admin('/api/services/whisper/logs?tail=5'))
      expect(logs.body.lines.join('\n')).toContain('engine core initialization failed (exit 3)')
    } finally {
      fs.rmSync(path.join(crash, 'whisper'))
      sim.cluster.node2.runLocal('docker rm -f whisper >/dev/null')
      servicesModule().manager.invalidate()
    }
  })

  it('refuses an llm action while a swap holds the llm (409, nothing run)', async () => {
    const models = daemon.core.modules.find((m) => m.name === 'models') as unknown as ModelsModule
    const holds = models.swap.holdsLlm.bind(models.swap)
    const ran = sim.cluster.node1.commands.length
    models.swap.holdsLlm = () => true
    try {
      const r = await json(await post('/api/services/llm/restart'))
      expect(r.status).toBe(409)
      expect(sim.cluster.node1.commands.slice(ran).filter((c) => c.includes('docker restart'))).toEqual([])
    } finally {
      models.swap.holdsLlm = holds
    }
  })

  it('answers the log tail with secrets redacted', async () => {
    const log = path.join(sim.cluster.node2.state, 'docker', 'logs', 'asr.log')
    fs.appendFileSync(
      log,
      `token in a stack trace: ${daemon.adminToken}\nAuthorization: Bearer abcdefgh12345678\nlast\n`,
    )
    const r = await json(await daemon.admin('/api/services/asr/logs?tail=3'))
    expect(r.status).toBe(200)
    expect(r.body.lines).toHaveLength(3)
    expect(r.body.lines[2]).toBe('last')
    const text = JSON.stringify(r.body)
    expect(text).not.toContain(daemon.adminToken)
    expect(text).not.toContain('abcdefgh12345678')
    expect((await daemon.admin('/api/services/asr/logs?tail=0')).status).toBe(400)
  })

  it('refuses to delete an always-on service (409) and an unknown one (404)', async () => {
    expect((await daemon.admin('/api/services/asr', { method: 'DELETE' })).status).toBe(409)
    expect((await daemon.admin('/api/services/nothing', { method: 'DELETE' })).status).toBe(404)
    expect((await list()).asr).toMatchObject({ name: 'asr', custom: false, container: 'asr' })
  })

  it('deletes a custom service: container removed, file rewritten atomically, bad entries kept verbatim', async () => {
    sim.cluster.node2.runLocal("docker run -d --name whisper 'ghcr.io/sim/whisper:1' >/dev/null")
    // Started behind the daemon's back: the cached container states are stale until forgotten.
    servicesModule().manager.invalidate()
    expect((await list()).whisper!.container_state).toBe('running')
    const r = await json(await daemon.admin('/api/services/whisper', { method: 'DELETE' }))
    expect(r).toEqual({ status: 200, body: { deleted: true } })
    expect(sim.cluster.node2.commands).toContain("docker rm -f 'whisper'")
    expect(Object.keys(await list())).toEqual(['llm', 'asr', 'tts'])
    const doc = YAML.parse(fs.readFileSync(overrides, 'utf8')) as { services: { name: string }[] }
    expect(doc.services.map((e) => e.name)).toEqual(['broken', 'asr'])
    expect(fs.readdirSync(dataDir).filter((f) => f.endsWith('.tmp'))).toEqual([])
  })

  it('manages services through the module the gateway and deep health use', () => {
    const services = servicesModule()
    expect(services.manager.locate('asr')).toMatchObject({ name: 'asr', container: 'asr' })
    expect(services.manager.locate('nothing')).toBeNull()
  })
})
