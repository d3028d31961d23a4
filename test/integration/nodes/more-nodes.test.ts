import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** A loopback port nothing listens on: bound once to learn a free one, then closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** NODES past the two simulated nodes: node3 on a closed loopback port, node4 malformed. */
describe('more than two nodes', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  let port3: number
  const clock = new ManualClock(Date.now())

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-more-nodes-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    port3 = await closedPort()
    daemon = await startDaemon({
      env: { ...sim.env(), MONITOR_INTERVAL_S: '0', NODES: `ops@127.0.0.1:${port3}, not an entry` },
      clock,
      dataDir,
    })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })

  it('GET /api/hardware lists node3 as unreachable, not missing, beside the two simulated nodes', async () => {
    const { status, body } = await json(await daemon.admin('/api/hardware?fresh=true'))
    expect(status).toBe(200)
    expect(body.node1).toMatchObject({ status: 'ok', hostname: 'spark-a1' })
    expect(body.node2).toMatchObject({ status: 'ok' })
    expect(body.node3).toMatchObject({ node: 'node3', status: 'unreachable', host: '127.0.0.1', port: port3 })
    expect(body.node4).toEqual({ node: 'node4', status: 'not_configured' })
    const conn = (await json(await daemon.admin('/api/connectivity'))).body
    expect(conn.subjects.node3.state).toBe('down')
  })

  it('keeps node3 in the hardware history and the SSH key commands, and reports the skipped entry', async () => {
    const history = (await json(await daemon.admin('/api/hardware/history'))).body
    expect(Object.keys(history).sort()).toEqual(['node1', 'node2', 'node3', 'node4'])
    const key = (await json(await daemon.admin('/api/ssh/public-key'))).body
    expect(key.nodes.map((n: { node: string }) => n.node)).toEqual(['node1', 'node2', 'node3'])
    expect(key.nodes[2]).toMatchObject({ host: '127.0.0.1', user: 'ops', port: port3 })
    expect(daemon.core.config.warnings.some((w) => w.startsWith('NODES: entry 2 (node4'))).toBe(true)
  })

  it('wakes node3 through a reachable node; a node NODES does not list is 404', async () => {
    const { status, body } = await json(
      await daemon.admin('/api/node/node3/wake', {
        method: 'POST',
        body: JSON.stringify({ mac: '4c:bb:47:2e:91:0c' }),
      }),
    )
    expect(status).toBe(200)
    expect(body).toMatchObject({ ok: true, node: 'node3', via: 'relay', relay: 'node1' })
    expect((await daemon.admin('/api/node/node5/wake', { method: 'POST', body: '{}' })).status).toBe(404)
  })
})
