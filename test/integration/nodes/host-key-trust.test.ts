import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'
import { keptAsideCopy } from '../../helpers/keptAside'

/** The real daemon on a DATA_DIR whose known_hosts.json is unreadable, against the simulated cluster. */
describe('an unreadable known_hosts.json', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-kh-daemon-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    fs.writeFileSync(path.join(dataDir, 'known_hosts.json'), '{"version": 1, "hosts": {"[127.0.0.1]:')
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })

  it('is kept aside, and no node is trusted: probes are refused with the presented fingerprint', async () => {
    expect(keptAsideCopy(path.join(dataDir, 'known_hosts.json'))).not.toBeNull()
    const hw = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    for (const n of ['node1', 'node2']) {
      expect(hw[n]).toMatchObject({ status: 'unreachable', error_kind: 'host_key_unconfirmed' })
      expect(hw[n].error).toMatch(/SHA256:[A-Za-z0-9+/]{43}/)
    }
    // Nothing was trusted behind the operator's back.
    expect((await json(await daemon.admin('/api/ssh/known-hosts'))).body).toEqual([])
    expect(daemon.logs.lines.join('\n')).toMatch(/no SSH host key is trusted until you confirm/)
  })

  it('lists the presented keys; trusting a fingerprint that is not the presented one is refused', async () => {
    const { body } = await json(await daemon.admin('/api/ssh/known-hosts/pending'))
    expect(body.confirmation_required).toBe(true)
    expect(body.kept_as).toMatch(/known_hosts\.json\.corrupt-\d{8}T\d{6}Z$/)
    const node1 = body.pending.find((p: { port: number }) => p.port === sim.cluster.node1.port)
    expect(node1).toMatchObject({ host: '127.0.0.1', expected_fingerprint: null })

    const wrong = await daemon.admin('/api/ssh/known-hosts/trust', {
      method: 'POST',
      body: JSON.stringify({
        host: '127.0.0.1',
        port: sim.cluster.node1.port,
        fingerprint: 'SHA256:' + 'A'.repeat(43),
      }),
    })
    expect(wrong.status).toBe(409)
    expect((await wrong.json()) as { detail: string }).toMatchObject({
      detail: expect.stringContaining(node1.fingerprint),
    })
    const malformed = await daemon.admin('/api/ssh/known-hosts/trust', {
      method: 'POST',
      body: JSON.stringify({ host: '127.0.0.1', port: sim.cluster.node1.port, fingerprint: 'md5:abc' }),
    })
    expect(malformed.status).toBe(400)

    const ok = await daemon.admin('/api/ssh/known-hosts/trust', {
      method: 'POST',
      body: JSON.stringify({ host: '127.0.0.1', port: sim.cluster.node1.port, fingerprint: node1.fingerprint }),
    })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ trusted: true, fingerprint: node1.fingerprint })

    const hw = (await json(await daemon.admin('/api/hardware?fresh=true'))).body
    expect(hw.node1.status).toBe('ok')
    // The other node still waits for its own confirmation.
    expect(hw.node2).toMatchObject({ status: 'unreachable', error_kind: 'host_key_unconfirmed' })
  })
})
