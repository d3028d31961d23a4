import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JobRecord } from '../../../src-main/contract/system'
import type { NodesModule } from '../../../src-main/nodes/module'
import { Prebuilt } from '../../../src-main/services/prebuilt'
import type { ServicesModule } from '../../../src-main/services/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** Prebuilt installs (spec 1, 4.5): login on stdin, pull with progress, run, chown, restart, persist. */
describe('prebuilt installs on the sim', () => {
  // Quotes, `$`, a backtick and a backslash: printable, as REGISTRY_API_KEY allows.
  const KEY = `nv'api"$HOME\`id\`\\key-0123456789`
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let services: ServicesModule

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const install = (body: Record<string, unknown>) =>
    daemon.admin('/api/prebuilt/install', { method: 'POST', body: JSON.stringify(body) })
  const node2Docker = (...p: string[]) => path.join(sim.cluster.node2.state, 'docker', ...p)
  const container = (name: string) =>
    JSON.parse(fs.readFileSync(node2Docker('containers', `${name}.json`), 'utf8')) as {
      Config: { Env: string[]; Image: string }
      HostConfig: { Binds: string[]; RestartPolicy: { Name: string }; PortBindings: Record<string, unknown> }
      RestartCount: number
    }
  const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex')
  /** Nowhere the key could leak to: the sim's command log, the daemon log. */
  const expectNoKey = (key: string, ...texts: string[]) => {
    const parts = key.split('\n')
    for (const t of [...texts, ...sim.cluster.node2.commands, ...daemon.logs.lines])
      for (const p of parts) expect(t).not.toContain(p)
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-prebuilt-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    daemon = await startDaemon({
      env: { ...sim.env(), MONITOR_INTERVAL_S: '0', REGISTRY_API_KEY: KEY },
      dataDir,
    })
    services = daemon.core.modules.find((m) => m.name === 'services') as unknown as ServicesModule
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('serves the catalog: speech recognition, speech synthesis and a speech platform', async () => {
    const r = await json(await daemon.admin('/api/prebuilt/catalog'))
    expect(r.status).toBe(200)
    expect(r.body.images.map((i: { kind: string }) => i.kind)).toEqual(['asr', 'tts', 'speech-platform'])
    expect(r.body.images[0]).toMatchObject({ port: 9000, cache_path: '/opt/nim/.cache', needs_registry_key: true })
  })

  it.each([
    ['image', { image: 'nvcr.io/nim/x;id' }],
    ['image', { image: 'nvcr.io/nim/$(id):1' }],
    ['container', { container: 'asr`id`' }],
    ['volume', { volume: 'cache vol' }],
    ['volume', { volume: "x';touch /tmp/p;'" }],
    ['port', { port: '9000;id' }],
    ['env name', { env: { 'A;B': '1' } }],
    ['cache path', { cache_path: '/opt/$(id)' }],
  ])('refuses shell metacharacters in the %s (400, nothing run)', async (_what, bad) => {
    const ran = sim.cluster.node2.commands.length
    const r = await install({ image: 'nvcr.io/nim/nvidia/parakeet:1', container: 'p', volume: 'v', port: 9100, ...bad })
    expect(r.status).toBe(400)
    expect(sim.cluster.node2.commands.slice(ran)).toEqual([])
  })

  it('installs: key on stdin only, pull progress, run with GPUs, chown, restart, custom service; key never printed', async () => {
    const r = await json(
      await install({
        image: 'nvcr.io/nim/nvidia/parakeet-tdt-0.6b-v2:1.0.0',
        container: 'parakeet-asr',
        volume: 'nim-cache-parakeet',
        cache_path: '/opt/nim/.cache',
        port: 9100,
        container_port: 9000,
        env: { NIM_TAGS_SELECTOR: "mode=all; echo '$x'" },
      }),
    )
    expect(r.status).toBe(200)
    const id = r.body.job_id as string
    // A second install while this one runs.
    const second = await install({ image: 'nvcr.io/nim/a:1', container: 'other', volume: 'v', port: 9101 })
    expect(second.status).toBe(409)

    const stream = await daemon.admin(`/api/prebuilt/install/${id}/stream`)
    const events = await readSse(stream)
    const job = (await json(await daemon.admin(`/api/prebuilt/install/${id}`))).body as JobRecord
    expect(job.state, job.error ?? '').toBe('succeeded')
    expect(job.progress).toMatchObject({ percent: 100 })
    expect(events.some((e) => e.data.includes('"progress"'))).toBe(true)
    expect(job.log.some((l) => l.includes('Pull complete'))).toBe(true)

    const logins = fs.readFileSync(node2Docker('logins.log'), 'utf8')
    expect(logins).toContain(`nvcr.io $oauthtoken ${sha(KEY)}`)
    const c = container('parakeet-asr')
    expect(c.Config.Env).toContain(`NGC_API_KEY=${KEY}`)
    expect(c.Config.Env).toContain("NIM_TAGS_SELECTOR=mode=all; echo '$x'")
    expect(c.HostConfig.Binds).toEqual(['nim-cache-parakeet:/opt/nim/.cache'])
    expect(c.HostConfig.RestartPolicy.Name).toBe('unless-stopped')
    expect(Object.keys(c.HostConfig.PortBindings)).toEqual(['9000/tcp'])
    expect(c.RestartCount).toBe(1)
    expect(fs.readFileSync(node2Docker('chowns.log'), 'utf8')).toContain('parakeet-asr -R 1000:1000 /opt/nim/.cache')

    const list = (await json(await daemon.admin('/api/services'))).body.services as { name: string; label: string }[]
    // Running, just started and not answering yet.
    expect(list.find((s) => s.name === 'parakeet-asr')).toMatchObject({ label: 'Starting' })
    expect(services.manager.customServices().map((s) => s.name)).toEqual(['parakeet-asr'])
    expectNoKey(KEY, JSON.stringify(job), JSON.stringify(events))
  })

  it('passes a key with quotes, $ and a newline intact, and never prints any line of it', async () => {
    const key = `line'one"$PATH\nline-two-$(id)`
    const nodes = daemon.core.modules.find((m) => m.name === 'nodes') as unknown as NodesModule
    const prebuilt = new Prebuilt({
      config: { nodes: daemon.core.config.nodes, registryApiKey: key },
      pool: nodes.pool,
      jobs: daemon.core.jobs,
      manager: services.manager,
      clock: daemon.core.clock,
      logger: daemon.core.logger,
    })
    const job = prebuilt.install({
      image: 'nvcr.io/nim/nvidia/magpie-tts-multilingual:1.3.0',
      container: 'magpie-tts',
      volume: 'nim-cache-magpie',
      cache_path: '/opt/nim/.cache',
      port: 9101,
      env: {},
      node: 'node2',
      role: 'tts',
    })
    // A line of the key echoed by the node ends up redacted in the job log.
    const done = await daemon.core.jobs.wait(job.id)
    expect(done.state, done.error ?? '').toBe('succeeded')
    expect(fs.readFileSync(node2Docker('logins.log'), 'utf8')).toContain(sha(key))
    expect(container('magpie-tts').Config.Env).toContain(`NGC_API_KEY=${key}`)
    expectNoKey(key, JSON.stringify(done))
  })

  it('fails with the phase and log when the node becomes unreachable mid-install', async () => {
    const node2 = sim.cluster.node2
    node2.setSlow(150)
    const r = await json(
      await install({ image: 'nvcr.io/nim/nvidia/riva:2', container: 'riva', volume: 'riva-cache', port: 9102 }),
    )
    expect(r.status).toBe(200)
    const id = r.body.job_id as string
    try {
      for (let i = 0; i < 500 && daemon.core.jobs.get(id).phase !== 'Pulling the image'; i++)
        await new Promise((res) => setTimeout(res, 10))
      await node2.down()
      const job = await daemon.core.jobs.wait(id)
      expect(job.state).toBe('failed')
      expect(job.error).toMatch(/^(Pulling the image|Starting the container): /)
      expect(job.log.at(-1)).toMatch(/^failed while (pulling the image|starting the container): /)
      expect(services.manager.customServices().map((s) => s.name)).not.toContain('riva')
    } finally {
      node2.clearFaults()
      await node2.up()
    }
  })
})
