import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import type { RoleLocation } from '../../../src-main/services/serviceDirectory'
import { serviceLabel, StatusService, type StatusDeps } from '../../../src-main/nodes/status'
import type { SshPool } from '../../../src-main/ssh/pool'

/** The label rules (Healthy, Starting, Unhealthy, Stopped, Not configured), against a real HTTP answer. */
describe('service labels', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12))
  let server: http.Server
  let port = 0
  let answer = 500

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(answer, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ data: [{ id: 'sim/model' }] }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  const statusFor = (state: string, startedAt: string): StatusService => {
    const pool = {
      exec: async () => ({ code: 0, stdout: `${state} ${startedAt} 0\n`, stderr: '' }),
    } as unknown as SshPool
    const deps = {
      config: { publicUrl: null, port: 8080, bind: '127.0.0.1' },
      services: null,
      pool,
      connectivity: { observe: async () => undefined },
      clock,
      logger: createLogger({ sink: { write: () => undefined } }),
    } as unknown as StatusDeps
    return new StatusService(deps)
  }
  const role = (): RoleLocation => ({
    name: 'asr',
    configured: true,
    baseUrl: `http://127.0.0.1:${port}`,
    hint: null,
    host: '127.0.0.1',
    port,
    ssh: { host: '127.0.0.1', user: 'spark', port: 22 },
    container: 'asr',
  })

  it('calls a just-started container that answers HTTP 500 Unhealthy, not Starting (the finding)', async () => {
    answer = 500
    const justStarted = new Date(clock.now() - 5_000).toISOString()
    const s = await statusFor('running', justStarted).check(role())
    expect(s.http_ok).toBe(false)
    expect(s.label).toBe('Unhealthy')
    expect(s.error).toContain('HTTP 500')
  })

  it('calls a running container that answers OK Healthy', async () => {
    answer = 200
    const s = await statusFor('running', new Date(clock.now() - 3_600_000).toISOString()).check(role())
    expect(s.label).toBe('Healthy')
  })

  it('calls an exited container Stopped', async () => {
    answer = 500
    const s = await statusFor('exited', new Date(clock.now() - 3_600_000).toISOString()).check(role())
    expect(s.label).toBe('Stopped')
  })

  it('applies the rules as documented', () => {
    const now = clock.now()
    const recent = new Date(now - 10_000).toISOString()
    const old = new Date(now - 3_600_000).toISOString()
    const label = (state: string, started: string | null, ok: boolean, answered: boolean) =>
      serviceLabel({ state, started_at: started }, { ok, answered }, now)
    expect(label('running', recent, true, true)).toBe('Healthy')
    expect(label('running', recent, false, false)).toBe('Starting')
    expect(label('restarting', old, false, false)).toBe('Starting')
    expect(label('running', recent, false, true)).toBe('Unhealthy')
    expect(label('running', old, false, false)).toBe('Unhealthy')
    expect(label('exited', old, false, false)).toBe('Stopped')
    expect(label('created', null, false, false)).toBe('Stopped')
    expect(label('missing', null, false, false)).toBe('Unhealthy')
    // The container state could not be read (SSH down) but the service answers: Healthy.
    expect(label('unknown', null, true, true)).toBe('Healthy')
  })
})
