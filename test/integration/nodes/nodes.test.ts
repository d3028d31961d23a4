import dgram from 'node:dgram'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { publicBaseUrl } from '../../../src-main/config/publicUrl'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'
import { keptAsideCopy } from '../../helpers/keptAside'

/** The real daemon against the simulated cluster, over real SSH and HTTP. */
describe('nodes over real SSH and HTTP', () => {
  let sim: FullSim
  let daemon: TestDaemon
  const clock = new ManualClock(Date.now())
  let dataDir: string

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-nodes-'))
    // The daemon's key exists before it starts, so the sim can authorise it.
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    // No background probes here: every probe in this suite is one the test asked for.
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  // Response bodies are checked field by field with matchers; a loose type keeps that readable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })

  it('GET /api/hardware probes both nodes and caches MACs', async () => {
    const { status, body } = await json(await daemon.admin('/api/hardware'))
    expect(status).toBe(200)
    expect(body.node1).toMatchObject({ status: 'ok', hostname: 'spark-a1', gpu_unified_memory: true, cores: 20 })
    expect(body.node2).toMatchObject({ status: 'ok', hostname: 'spark-b2', mac: '4c:bb:47:2e:91:0b' })
    expect(body.node1.gpu.name).toBe('NVIDIA GB10')
    expect(body.node1.gpu.memory_fraction).toBeGreaterThan(0)
    const conn = (await json(await daemon.admin('/api/connectivity'))).body
    expect(conn.macs).toEqual({ node1: '4c:bb:47:2e:91:0a', node2: '4c:bb:47:2e:91:0b' })
    expect(conn.subjects.node1.state).toBe('up')
  })

  it('the control API needs the admin credential', async () => {
    expect((await fetch(`${daemon.url}/api/hardware`)).status).toBe(401)
  })

  it('a down node is unreachable, cached 25 s for plain reads, one transition; a fresh read sees it back at once', async () => {
    clock.advance(60_000)
    await daemon.admin('/api/hardware?fresh=true')
    await sim.cluster.node2.down()
    const t0 = clock.now()
    const first = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    expect(first.node2).toMatchObject({ status: 'unreachable', mac: '4c:bb:47:2e:91:0b' })
    expect(first.node2.error).toMatch(/refused/i)
    expect(first.node1.status).toBe('ok')

    // Back up, but a plain read within 25 s answers from the remembered failure: no new attempt.
    await sim.cluster.node2.up()
    const before = sim.cluster.node2.commands.length
    clock.advance(20_000)
    const cached = (await json(await daemon.admin('/api/hardware'))).body
    expect(cached.node2.status).toBe('unreachable')
    expect(sim.cluster.node2.commands.length).toBe(before)

    // A fresh read asks the node now (issue 33, item 7): it is back at once, not 5 s later.
    const back = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    expect(back.node2.status).toBe('ok')
    const events = (await json(await daemon.admin('/api/connectivity'))).body.events.filter(
      (e: { subject: string; kind: string }) => e.subject === 'node2' && e.kind === 'transition',
    )
    expect(events.map((e: { state: string }) => e.state)).toEqual(['down', 'up'])
    expect(events[1].down_seconds).toBe(Math.round((clock.now() - t0) / 1000))
    expect(events[1].down_seconds).toBe(20)
  })

  it('POST /api/health-event records a report and never changes state', async () => {
    const ok = await fetch(`${daemon.url}/api/health-event`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ service: 'node1', ok: false, source: 'notes-app', error: 'timeout', ms: 6001 }),
    })
    expect(ok.status).toBe(200)
    const conn = (await json(await daemon.admin('/api/connectivity'))).body
    expect(conn.events.at(-1)).toMatchObject({
      kind: 'report',
      subject: 'node1',
      ok: false,
      source: 'notes-app',
      ms: 6001,
    })
    expect(conn.subjects.node1.state).toBe('up')
  })

  it('a health-event with a wrong type is 400', async () => {
    for (const body of [{ service: 'llm', ok: 'yes' }, { ok: true }, { service: 'llm', ok: true, ms: 'fast' }]) {
      const res = await fetch(`${daemon.url}/api/health-event`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(400)
    }
  })

  it('wake: unknown node 404, malformed MAC 400', async () => {
    expect((await daemon.admin('/api/node/node3/wake', { method: 'POST', body: '{}' })).status).toBe(404)
    const bad = await daemon.admin('/api/node/node1/wake', {
      method: 'POST',
      body: JSON.stringify({ mac: '4c:bb:47:zz:91:0a' }),
    })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/MAC/)
  })

  it('wake sends the magic packet from the other node to the configured loopback broadcast', async () => {
    // Spec ports 9 and 7: binding them needs privileges; skip the byte check when not allowed.
    const socks: dgram.Socket[] = []
    const packets: Buffer[] = []
    for (const port of [9, 7]) {
      const s = dgram.createSocket('udp4')
      s.on('message', (m) => packets.push(m))
      const bound = await new Promise<boolean>((resolve) => {
        s.once('error', () => resolve(false))
        s.bind(port, '127.0.0.1', () => resolve(true))
      })
      if (bound) socks.push(s)
      else s.close()
    }
    const { status, body } = await json(await daemon.admin('/api/node/node2/wake', { method: 'POST', body: '{}' }))
    expect(status).toBe(200)
    expect(body).toMatchObject({ ok: true, node: 'node2', mac: '4c:bb:47:2e:91:0b', via: 'relay', relay: 'node1' })
    if (socks.length === 2) {
      for (let i = 0; i < 50 && packets.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
      expect(packets).toHaveLength(2)
      expect(packets[0]!.toString('hex')).toBe('ff'.repeat(6) + '4cbb472e910b'.repeat(16))
    }
    for (const s of socks) s.close()
  })

  it('GET /api/status: container state, HTTP health and model; a stopped llm is recorded down', async () => {
    const { body } = await json(await daemon.admin('/api/status'))
    expect(body.llm).toMatchObject({
      configured: true,
      container_state: 'running',
      http_ok: true,
      model: 'Qwen/Qwen3-8B',
      label: 'Healthy',
    })
    expect(body.llm.base_url).toBe(`${publicBaseUrl(daemon.core.config)}/v1`)
    expect(body.asr).toMatchObject({ container_state: 'running', http_ok: true, label: 'Healthy' })
    expect(body.tts.container_state).toBe('running')

    const r = sim.cluster.node1.runLocal('docker stop vllm_node')
    expect(r.code).toBe(0)
    const after = (await json(await daemon.admin('/api/status'))).body
    expect(after.llm).toMatchObject({ container_state: 'exited', http_ok: false, label: 'Stopped' })
    const conn = (await json(await daemon.admin('/api/connectivity'))).body
    expect(conn.subjects.llm.state).toBe('down')
    expect(conn.events.at(-1)).toMatchObject({ subject: 'llm', kind: 'transition', state: 'down' })

    sim.cluster.node1.runLocal('docker start vllm_node')
    const endpoints = (await json(await fetch(`${daemon.url}/api/endpoints`))).body
    expect(endpoints.llm).toMatchObject({ ready: true, model: 'Qwen/Qwen3-8B' })
    expect(endpoints.asr.ready).toBe(true)
    expect(endpoints.llm.base_url).toMatch(/\/v1$/)
  })

  it('GET /api/ssh/public-key gives a command that really authorises the key', async () => {
    const { body } = await json(await daemon.admin('/api/ssh/public-key'))
    expect(body.public_key).toMatch(/^ssh-ed25519 /)
    expect(body.nodes).toHaveLength(2)
    expect(body.nodes[0].command).toContain(`-p ${sim.cluster.node1.port}`)
    // Run the node-side command on a node that does not know the key yet.
    const node = sim.cluster.node2
    fs.writeFileSync(path.join(node.home, '.ssh', 'authorized_keys'), '')
    const r = node.runLocal(body.nodes[1].remote_command)
    expect(r.code).toBe(0)
    node.runLocal(body.nodes[1].remote_command)
    const lines = fs
      .readFileSync(path.join(node.home, '.ssh', 'authorized_keys'), 'utf8')
      .trim()
      .split('\n')
    expect(lines).toEqual([body.public_key])
  })

  it('a changed host key is refused until the operator forgets the old one', async () => {
    const node = sim.cluster.node1
    await node.rotateHostKey()
    const refused = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    expect(refused.node1).toMatchObject({ status: 'unreachable', error_kind: 'host_key_changed', port: node.port })
    expect(refused.node1.error).toMatch(/host key changed.*known-hosts/s)
    const known = (await json(await daemon.admin('/api/ssh/known-hosts'))).body as { name: string }[]
    expect(known.map((k) => k.name)).toContain(`[127.0.0.1]:${node.port}`)
    const forget = await daemon.admin(`/api/ssh/known-hosts?host=127.0.0.1&port=${node.port}`, { method: 'DELETE' })
    expect((await json(forget)).body).toEqual({ forgotten: true })
    const back = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    expect(back.node1.status).toBe('ok')
  })

  it('GET /api/config carries the node roles', async () => {
    const { body } = await json(await daemon.admin('/api/config'))
    expect(body.roles.node1).toMatchObject({ host: '127.0.0.1', ssh_port: sim.cluster.node1.port, configured: true })
    // The configured nodes, for what counts them (the Settings page's Nodes line).
    expect(body.nodes).toEqual(['node1', 'node2'])
  })
})

describe('a corrupt connectivity.json', () => {
  it('is kept aside and the daemon runs with a fresh store', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-corrupt-'))
    fs.writeFileSync(path.join(dataDir, 'connectivity.json'), '{"events": [{"subj')
    const daemon = await startDaemon({ dataDir })
    try {
      const res = await daemon.admin('/api/connectivity')
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ macs: {}, subjects: {}, events: [] })
      expect(keptAsideCopy(path.join(dataDir, 'connectivity.json'))).not.toBeNull()
      const hw = (await (await daemon.admin('/api/hardware')).json()) as { node1: unknown }
      expect(hw.node1).toEqual({ node: 'node1', status: 'not_configured' })
    } finally {
      await daemon.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('background monitoring', () => {
  it('probes nodes and services on its own and records what it sees', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-monitor-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    const sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '1' }, dataDir })
    try {
      await sim.llm.setFault('refused')
      for (let i = 0; i < 50; i++) {
        const conn = (await (await daemon.admin('/api/connectivity')).json()) as {
          subjects: Record<string, { state: string }>
          macs: Record<string, string>
        }
        if (conn.subjects.llm && conn.subjects.node2 && conn.macs.node1) break
        await new Promise((r) => setTimeout(r, 100))
      }
      // No API call probed anything: the monitor did.
      const conn = (await (await daemon.admin('/api/connectivity')).json()) as {
        subjects: Record<string, { state: string }>
        macs: Record<string, string>
      }
      expect(conn.subjects.node1?.state).toBe('up')
      expect(conn.subjects.llm?.state).toBe('down')
      expect(conn.macs.node2).toBe('4c:bb:47:2e:91:0b')
      expect(sim.cluster.node1.commands.length).toBeGreaterThan(0)
    } finally {
      await daemon.stop()
      await sim.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
