import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import type { RoleLocation } from '../../../src-main/cluster/serviceDirectory'
import { deepHealthVerdict, serviceLabel, withDeepHealth } from '../../../src-main/services/labels'
import { StatusService, type DeepHealthSource, type StatusDeps } from '../../../src-main/services/status'
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

  const statusFor = (
    state: string,
    startedAt: string | (() => string),
    deepHealth?: DeepHealthSource,
  ): StatusService => {
    const pool = {
      exec: async () => ({
        code: 0,
        stdout: `${state} ${typeof startedAt === 'string' ? startedAt : startedAt()} 0\n`,
        stderr: '',
      }),
    } as unknown as SshPool
    const deps = {
      config: {
        publicUrl: null,
        port: 8080,
        bind: '127.0.0.1',
        nodes: { node1: null, node2: { host: '127.0.0.1', user: 'spark', port: 22 } },
      },
      services: null,
      pool,
      connectivity: { observe: async () => undefined },
      clock,
      logger: createLogger({ sink: { write: () => undefined } }),
      deepHealth,
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

  it("builds a custom service's row as it builds an always-on one, by the same rules (one builder)", async () => {
    answer = 500
    const started = new Date(clock.now() - 3_600_000).toISOString()
    const status = statusFor('running', started)
    const always = await status.check(role())
    const container = { state: 'running', started_at: started, restart_count: 0, error: null }
    const whisper = { name: 'whisper', node: 'node2', container: 'asr', port, image: null, volume: null }
    const entry = { ...whisper, cache_path: null, role: null, added_at: 0 } as const
    const custom = await status.checkCustom(entry, container)
    const { http_ms: _a, ...alwaysRest } = always
    const { http_ms: _b, ...customRest } = custom
    expect(customRest).toEqual({ ...alwaysRest, name: 'whisper', base_url: `http://127.0.0.1:${port}` })
    expect(custom).toMatchObject({ label: 'Unhealthy', error: 'HTTP 500 from /health', deep_health: null })
    const gone = await status.checkCustom(entry, {
      ...container,
      state: 'unknown',
      error: 'connect ETIMEDOUT',
      unreachable: true,
    })
    expect(gone).toMatchObject({ label: 'Unknown', label_reason: 'node unreachable' })
    expect(gone.actions_blocked).toContain('node2 is unreachable over SSH (connect ETIMEDOUT)')
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

  describe('with deep health (issue 31: the card and the deep-health row agree)', () => {
    type Latest = ReturnType<DeepHealthSource['latest']>
    const source = (): DeepHealthSource & { result: Latest; asked: string[] } => ({
      result: null,
      asked: [],
      latest(service) {
        return service === 'asr' ? this.result : null
      },
      requestProbe(service, reason) {
        this.asked.push(`${service}: ${reason}`)
      },
    })
    const wedged = (at: number): Latest => ({
      ok: false,
      wedged: true,
      at,
      error: 'HTTP 500 from /v1/audio/transcriptions: cudaErrorUnknown',
    })

    it('reads Unhealthy (deep health: wedged) while /health answers OK, until the container starts again', async () => {
      answer = 200
      let started = new Date(clock.now() - 3_600_000).toISOString()
      const deep = source()
      const status = statusFor('running', () => started, deep)
      expect(await status.check(role())).toMatchObject({ label: 'Healthy', deep_health: null })

      clock.advance(1000)
      deep.result = wedged(clock.now())
      const s = await status.check(role())
      expect(s).toMatchObject({ label: 'Unhealthy', label_reason: 'deep health: wedged', http_ok: true })
      expect(s.error).toContain('cudaErrorUnknown')
      expect(s.deep_health).toEqual({ ok: false, wedged: true, at: clock.now(), stale: false })
      expect(deep.asked).toEqual([])

      // A new container start: the failed probe is from before it, so /health decides and deep health looks again.
      clock.advance(1000)
      started = new Date(clock.now()).toISOString()
      const after = await status.check(role())
      expect(after).toMatchObject({ label: 'Healthy', label_reason: null, error: null })
      expect(after.deep_health).toMatchObject({ ok: false, stale: true })
      expect(deep.asked).toEqual(['asr: it came up again after a failing probe'])

      deep.result = { ok: true, wedged: false, at: clock.now() + 1, error: null }
      expect(await status.check(role())).toMatchObject({ label: 'Healthy', deep_health: { ok: true, stale: false } })
      expect(deep.asked).toHaveLength(1)
    })

    it('leaves a label /health already decided alone, and a failed probe is stale once /health turns OK again', async () => {
      const deep = source()
      const status = statusFor('running', new Date(clock.now() - 3_600_000).toISOString(), deep)
      answer = 500
      clock.advance(1000)
      deep.result = wedged(clock.now())
      expect(await status.check(role())).toMatchObject({ label: 'Unhealthy', label_reason: null, http_ok: false })
      expect(deep.asked).toEqual([])
      answer = 200
      clock.advance(1000)
      expect(await status.check(role())).toMatchObject({ label: 'Healthy', deep_health: { stale: true } })
      expect(deep.asked).toHaveLength(1)
    })

    it('a passing probe from before a restart is stale too, and deep health probes again at once (issue 46)', async () => {
      answer = 200
      let started = new Date(clock.now() - 3_600_000).toISOString()
      const deep = source()
      deep.result = { ok: true, wedged: false, at: clock.now(), error: null }
      const status = statusFor('running', () => started, deep)
      clock.advance(1000)
      expect(await status.check(role())).toMatchObject({ label: 'Healthy', deep_health: { ok: true, stale: true } })
      expect(deep.asked).toEqual(['asr: it came up again after a passing probe'])
      // The probe that follows began after it came up: the note goes.
      clock.advance(1000)
      deep.result = { ok: true, wedged: false, at: clock.now(), error: null }
      expect(await status.check(role())).toMatchObject({ deep_health: { ok: true, stale: false } })
      // A restart (a new container start) makes it stale again, and asks again.
      clock.advance(1000)
      started = new Date(clock.now()).toISOString()
      expect(await status.check(role())).toMatchObject({ deep_health: { stale: true } })
      expect(deep.asked).toHaveLength(2)
    })

    it('applies the rule as documented', () => {
      const healthy = { label: 'Healthy' as const, label_reason: null, actions_blocked: null }
      const failing = { ok: false, wedged: false, at: 100, error: 'no answer' }
      expect(deepHealthVerdict(null, 50)).toBeNull()
      expect(deepHealthVerdict(failing, 50)).toMatchObject({ stale: false })
      // A probe that began as the service came up does not count as newer than it.
      expect(deepHealthVerdict(failing, 100)).toMatchObject({ stale: true })
      expect(deepHealthVerdict(failing, null)).toMatchObject({ stale: false })
      expect(withDeepHealth(healthy, deepHealthVerdict(failing, 50))).toEqual({
        label: 'Unhealthy',
        label_reason: 'deep health: failing',
        actions_blocked: null,
      })
      expect(withDeepHealth(healthy, deepHealthVerdict(failing, 100))).toBe(healthy)
      const stopped = { label: 'Stopped' as const, label_reason: null, actions_blocked: null }
      expect(withDeepHealth(stopped, deepHealthVerdict(failing, null))).toBe(stopped)
    })
  })
})
