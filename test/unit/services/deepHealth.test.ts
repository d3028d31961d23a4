import fs from 'node:fs'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import type { EventPublisher } from '../../../src-main/platform/eventBus'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import type { RoleLocation, RoleName } from '../../../src-main/cluster/serviceDirectory'
import type { EventName, EventPayload } from '../../../src-main/contract/events'
import type { DeepHealthResult } from '../../../src-main/contract/services'
import type { ReportSink } from '../../../src-main/services/deepHealthHook'
import { DeepHealth, RESTART_LIMITS, type DeepHealthDeps } from '../../../src-main/services/deepHealth'
import { DEEP_HEALTH_PROBES, IDLE_NOTE, silenceWav } from '../../../src-main/gateway/deepHealthProbes'
import { wedgePattern } from '../../../src-main/services/probeOutcome'
import { deepHealthHandlers } from '../../../src-main/services/deepHealthHandlers'
import type { ServiceControl, ServiceLocation } from '../../../src-main/services/types'
import type { ExecResult } from '../../../src-main/ssh/pool'
import { startFakeAsr, startFakeLlm, startFakeTts, type FakeAsr, type FakeLlm, type FakeTts } from '../../sim/http'

const SSH = { host: '127.0.0.1', user: 'sim', port: 22 }
const CONTAINERS: Record<RoleName, string> = { asr: 'asr', tts: 'tts', llm: 'vllm_node' }

/** The services manager's part deep health uses: locations on loopback, restarts recorded (and a container start time). */
class FakeControl implements ServiceControl {
  readonly restarts: { name: string; reason: string; at: number }[] = []
  /** Container start times (ms, by the test clock), as `docker inspect` would tell them. */
  readonly startedAt = new Map<string, number>()
  failRestart: string | null = null
  throwOnLocate: string | null = null

  constructor(
    private readonly clock: ManualClock,
    private readonly bases: Partial<Record<RoleName, string>>,
    private readonly onRestart: (name: string) => void = () => undefined,
  ) {}

  locate(name: string): ServiceLocation | null {
    if (name === this.throwOnLocate) throw new Error('the manager fell over')
    const base = this.bases[name as RoleName]
    if (!base) return null
    return { name, ssh: SSH, container: CONTAINERS[name as RoleName], baseUrl: base }
  }

  async restart(name: string, reason: string): Promise<void> {
    if (this.failRestart) throw new Error(this.failRestart)
    this.restarts.push({ name, reason, at: this.clock.now() })
    this.startedAt.set(CONTAINERS[name as RoleName], this.clock.now())
    this.onRestart(name)
  }

  /** `docker inspect -f '{{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}' <container>` */
  pool = {
    exec: async (_t: unknown, command: string): Promise<ExecResult> => {
      const container = /'([^']+)'\s*$/.exec(command)?.[1] ?? ''
      const at = this.startedAt.get(container) ?? this.clock.now() - 3_600_000
      return { code: 0, signal: null, stdout: `running ${new Date(at).toISOString()} 0\n`, stderr: '' }
    },
  }
}

/** A directory with nothing configured: deep health takes its locations from the control. */
const directory = {
  role: (name: RoleName): RoleLocation => ({
    name,
    configured: false,
    baseUrl: null,
    hint: `${name} is not configured`,
    host: null,
    port: 0,
    ssh: null,
    container: CONTAINERS[name],
  }),
}

class Recorder implements EventPublisher, ReportSink {
  readonly results: DeepHealthResult[] = []
  readonly reports: { subject: string; input: Parameters<ReportSink['report']>[1] }[] = []
  private waiters: { n: number; resolve: () => void }[] = []
  publishThrows = false
  /** Publish calls that threw. */
  thrown = 0
  private onThrow: (() => void) | null = null

  publish<K extends EventName>(name: K, data: EventPayload<K>): void {
    if (this.publishThrows) {
      this.thrown += 1
      this.onThrow?.()
      throw new Error('the event bus is broken')
    }
    if (name === 'deephealth.result') this.results.push(data as DeepHealthResult)
    for (const w of [...this.waiters]) if (this.results.length >= w.n) w.resolve()
  }

  async report(subject: string, input: Parameters<ReportSink['report']>[1]): Promise<unknown> {
    this.reports.push({ subject, input })
    return null
  }

  /** Resolves once `n` publish calls have thrown. */
  untilThrown(n: number): Promise<void> {
    return new Promise((resolve) => {
      this.onThrow = () => {
        if (this.thrown >= n) resolve()
      }
    })
  }

  /** Resolves once `n` results in all have been published. */
  until(n: number): Promise<void> {
    if (this.results.length >= n) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push({ n, resolve }))
  }
}

describe('wedge patterns and the silence probe', () => {
  it('matches the spec’s wedge patterns and nothing else', () => {
    expect(wedgePattern(503, 'CUDA error: cudaErrorUnknown')).toBe('cudaErrorUnknown')
    expect(wedgePattern(502, 'cuFFT failed: CUFFT_INTERNAL_ERROR')).toBe('CUFFT_INTERNAL_ERROR')
    expect(wedgePattern(null, 'RuntimeError: Engine core initialization failed. See root cause above.')).toBe(
      'engine core init failure',
    )
    expect(wedgePattern(null, 'ERROR [core.py] EngineCore failed to start.')).toBe('engine core init failure')
    expect(wedgePattern(500, 'something broke')).toBe('HTTP 500')
    expect(wedgePattern(503, 'loading')).toBeNull()
    expect(wedgePattern(null, 'unreachable (ECONNREFUSED)')).toBeNull()
  })

  it('builds 1 s of digital silence as a real 16 kHz mono WAV', () => {
    const wav = silenceWav()
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF')
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ')
    expect(wav.readUInt32LE(24)).toBe(16000)
    expect(wav.readUInt32LE(40)).toBe(32000)
    expect(wav.length).toBe(44 + 32000)
    expect(wav.subarray(44).every((b) => b === 0)).toBe(true)
  })
})

describe('deep health', () => {
  let asr: FakeAsr
  let tts: FakeTts
  let llm: FakeLlm
  const made: DeepHealth[] = []

  beforeAll(async () => {
    ;[asr, tts, llm] = await Promise.all([startFakeAsr(), startFakeTts(), startFakeLlm({ model: 'sim/Qwen3-8B' })])
  })
  afterAll(async () => {
    await Promise.all([asr.close(), tts.close(), llm.close()])
  })
  afterEach(async () => {
    for (const d of made.splice(0)) d.stop()
    asr.containerStarted()
    await Promise.all([asr.setFault('none'), tts.setFault('none'), llm.setFault('none')])
    llm.setModel('sim/Qwen3-8B')
  })

  function rig(opts: Partial<DeepHealthDeps> & { clock?: ManualClock; restartClears?: boolean } = {}) {
    const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 0, 1))
    const rec = new Recorder()
    const control = new FakeControl(clock, { asr: asr.url, tts: tts.url, llm: llm.url }, (name) => {
      if (name === 'asr' && opts.restartClears) asr.containerStarted()
    })
    const logs = new MemorySink()
    let swapping = false
    const dh = new DeepHealth({
      control,
      directory,
      pool: control.pool,
      connectivity: rec,
      events: rec,
      clock,
      logger: createLogger({ sink: logs }),
      intervalS: 300,
      swapBusy: () => swapping,
      probes: DEEP_HEALTH_PROBES,
      ...opts,
    })
    made.push(dh)
    return { dh, clock, rec, control, logs, setSwap: (on: boolean) => (swapping = on) }
  }

  const transcriptions = (): number => asr.requests.filter((r) => r.path === '/v1/audio/transcriptions').length

  it('runs the probes it is given, at the base each service answers on (issue 40: probes apart from the scheduler)', async () => {
    const seen: { kind: string; base: string }[] = []
    const probe =
      (kind: 'asr' | 'tts' | 'llm', outcome: { ok: boolean; error: string | null }) =>
      async (base: string, signal: AbortSignal) => {
        expect(signal.aborted).toBe(false)
        seen.push({ kind, base })
        return { ...outcome, note: null, status: null }
      }
    const { dh } = rig({
      probes: {
        asr: probe('asr', { ok: true, error: null }),
        tts: probe('tts', { ok: true, error: null }),
        llm: probe('llm', { ok: false, error: 'CUDA error: cudaErrorUnknown' }),
      },
    })
    const llmCalls = llm.requests.length
    const results = await dh.round()
    expect(seen.sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
      { kind: 'asr', base: asr.url },
      { kind: 'llm', base: llm.url },
      { kind: 'tts', base: tts.url },
    ])
    const byService = Object.fromEntries(results.map((r) => [r.service, r]))
    expect(byService.asr).toMatchObject({ ok: true, wedged: false })
    expect(byService.llm).toMatchObject({ ok: false, wedged: true, error: 'CUDA error: cudaErrorUnknown' })
    expect(llm.requests.length).toBe(llmCalls)
  })

  it('probes asr, tts and llm for real when all are healthy', async () => {
    const { dh, rec } = rig()
    const before = transcriptions()
    const results = await dh.round()
    expect(results.map((r) => [r.service, r.ok, r.wedged])).toEqual([
      ['asr', true, false],
      ['tts', true, false],
      ['llm', true, false],
    ])
    expect(transcriptions()).toBe(before + 1)
    // The asr got a WAV file of 1 s of silence as multipart.
    const sent = asr.requests.filter((r) => r.path === '/v1/audio/transcriptions').at(-1)!
    expect(String(sent.headers['content-type'])).toMatch(/^multipart\/form-data/)
    expect(sent.head.includes(Buffer.from('RIFF'))).toBe(true)
    expect(tts.requests.some((r) => r.path === '/v1/audio/synthesize' && r.method === 'POST')).toBe(true)
    expect(llm.lastRequest).toMatchObject({ max_tokens: 1, model: 'sim/Qwen3-8B' })
    expect(results.find((r) => r.service === 'llm')?.note).toMatch(/one token/)
    expect(rec.results).toHaveLength(3)
    expect(dh.view().services.map((s) => [s.service, s.configured, s.last?.ok])).toEqual([
      ['asr', true, true],
      ['tts', true, true],
      ['llm', true, true],
    ])
  })

  it('restarts a wedged asr once, then is held back by the grace, the cooldown and the 30-minute cap', async () => {
    const { dh, clock, control } = rig()
    asr.wedge()
    const t0 = clock.now()
    const at = async (s: number) => {
      clock.set(t0 + s * 1000)
      return (await dh.run('asr')).restart
    }
    // 10 s after the daemon started: the start-up grace holds.
    expect(await at(10)).toMatchObject({ requested: true, done: false, held_by: 'grace' })
    expect(control.restarts).toHaveLength(0)
    expect(await at(61)).toMatchObject({ requested: true, done: true, held_by: null })
    expect(control.restarts).toEqual([expect.objectContaining({ name: 'asr', reason: expect.stringMatching(/cuda/i) })])
    // 30 s after that restart: the container is in its grace again.
    const grace = await at(91)
    expect(grace).toMatchObject({ done: false, held_by: 'grace' })
    expect(grace.detail).toMatch(/30 s ago/)
    // 70 s after it: grace over, cooldown (120 s) holds.
    expect(await at(131)).toMatchObject({ done: false, held_by: 'cooldown' })
    expect(await at(181)).toMatchObject({ done: true })
    expect(await at(301)).toMatchObject({ done: true })
    // Three restarts in the last 30 minutes: the cap holds, even long after the cooldown.
    expect(await at(500)).toMatchObject({ done: false, held_by: 'cap' })
    expect(await at(1800)).toMatchObject({ done: false, held_by: 'cap' })
    expect(control.restarts).toHaveLength(3)
    const view = dh.view().services.find((s) => s.service === 'asr')!
    expect(view).toMatchObject({ restarts_last_30m: 3, total_restarts: 3, last_restart_at: t0 + 301_000 })
    expect(view.last?.restart.held_by).toBe('cap')
    // The first restart leaves the 30-minute window: one more is allowed.
    expect(await at(61 + 1800)).toMatchObject({ done: true })
    expect(control.restarts).toHaveLength(4)
  })

  it('holds a restart while the container itself started less than 60 s ago', async () => {
    const { dh, clock, control } = rig()
    clock.advance(10 * 60_000)
    control.startedAt.set('asr', clock.now() - 20_000)
    asr.wedge()
    const r = await dh.run('asr')
    expect(r.restart).toMatchObject({ requested: true, done: false, held_by: 'grace' })
    expect(r.restart.detail).toMatch(/container started 20 s ago/)
    expect(control.restarts).toHaveLength(0)
  })

  it('labels a plain HTTP 500 for what it is: failing, restarted, not wedged', async () => {
    const { dh, clock, control } = rig()
    clock.advance(10 * 60_000)
    await asr.setFault({ kind: 'error500', message: 'Internal Server Error' })
    const plain = await dh.run('asr')
    expect(plain).toMatchObject({ ok: false, wedged: false, restart: { requested: true, done: true } })
    expect(plain.error).toMatch(/HTTP 500/)
    expect(plain.restart.detail).toContain('HTTP 500')
    expect(control.restarts).toHaveLength(1)
    // The same status with a known wedge error in it is a wedge.
    clock.advance(10 * 60_000)
    await asr.setFault({ kind: 'error500', message: 'CUDA error: cudaErrorUnknown' })
    expect(await dh.run('asr')).toMatchObject({ ok: false, wedged: true })
  })

  it('reports a restart that failed, without pretending it happened', async () => {
    const { dh, clock, control } = rig()
    clock.advance(10 * 60_000)
    control.failRestart = 'node2 unreachable'
    asr.wedge()
    const r = await dh.run('asr')
    expect(r.restart).toMatchObject({ requested: true, done: false, held_by: null })
    expect(r.restart.detail).toMatch(/restart failed: node2 unreachable/)
  })

  it('reports a recovery (failing → ok) to connectivity with source deep-health', async () => {
    const { dh, clock, rec } = rig({ restartClears: true })
    clock.advance(10 * 60_000)
    asr.wedge()
    const failing = await dh.run('asr')
    expect(failing).toMatchObject({ ok: false, wedged: true, restart: { done: true } })
    expect(failing.error).toMatch(/HTTP 500.*cudaErrorUnknown/)
    expect(rec.reports).toHaveLength(0)
    const back = await dh.run('asr')
    expect(back.ok).toBe(true)
    await new Promise((r) => setImmediate(r))
    expect(rec.reports).toEqual([
      {
        subject: 'asr',
        input: expect.objectContaining({ ok: true, source: 'deep-health', detail: expect.stringMatching(/recovered/) }),
      },
    ])
    // ok → ok is no recovery.
    await dh.run('asr')
    await new Promise((r) => setImmediate(r))
    expect(rec.reports).toHaveLength(1)
  })

  it('treats an llm with an empty model list or no answer as idle, never restarting it', async () => {
    const { dh, clock, control } = rig()
    clock.advance(10 * 60_000)
    llm.setModel(null)
    expect(await dh.run('llm')).toMatchObject({ ok: true, note: IDLE_NOTE, wedged: false })
    await llm.setFault('refused')
    expect(await dh.run('llm')).toMatchObject({ ok: true, note: IDLE_NOTE, restart: { requested: false } })
    expect(control.restarts).toHaveLength(0)
  })

  it('never restarts the llm while a swap holds it', async () => {
    const { dh, clock, control, setSwap } = rig()
    clock.advance(10 * 60_000)
    await llm.setFault({ kind: 'error500', message: 'RuntimeError: Engine core initialization failed.' })
    setSwap(true)
    expect((await dh.run('llm')).restart).toMatchObject({ requested: true, done: false, held_by: 'swap' })
    expect(control.restarts).toHaveLength(0)
    setSwap(false)
    expect((await dh.run('llm')).restart).toMatchObject({ done: true })
  })

  it('does not hold other services or a second request behind a hung probe', async () => {
    const { dh } = rig()
    await asr.setFault('hang')
    const before = transcriptions()
    const hung = dh.run('asr')
    // A second request joins the running probe instead of starting another.
    expect(dh.run('asr')).toBe(hung)
    expect(dh.requestProbe('asr', 'gateway saw a 500')).toBe('running')
    const [t, l] = await Promise.all([dh.run('tts'), dh.run('llm')])
    expect([t.ok, l.ok]).toEqual([true, true])
    expect(dh.view().services.find((s) => s.service === 'asr')?.running).toBe(true)
    await new Promise((r) => setImmediate(r))
    expect(transcriptions()).toBe(before + 1)
    dh.stop()
    const r = await hung
    expect(r).toMatchObject({ ok: false, wedged: false, restart: { requested: false } })
  })

  it('ends a hung probe at its deadline as a failure that is not a wedge', async () => {
    const { dh } = rig({ timeoutsMs: { asr: 150 } })
    await asr.setFault('hang')
    const r = await dh.run('asr')
    expect(r).toMatchObject({ ok: false, wedged: false, restart: { requested: false } })
    expect(r.error).toMatch(/no answer .* in time/)
    await asr.setFault('none')
    expect((await dh.run('asr')).ok).toBe(true)
  })

  it('turns a probe that throws into a failing result and the loop goes on', async () => {
    const { dh, rec, control } = rig({ intervalS: 0.02 })
    control.throwOnLocate = 'tts'
    rec.publishThrows = true
    dh.start()
    // Two rounds run while publishing throws; then the loop is still there when it works again.
    await rec.untilThrown(4)
    rec.publishThrows = false
    await rec.until(4)
    expect(rec.results.some((r) => r.service === 'asr' && r.ok)).toBe(true)
    // The service whose locate throws is left out, not the round.
    expect(rec.results.some((r) => r.service === 'tts')).toBe(false)
  })

  it('answers the handlers: the view, a run, 404 for an unknown service, 409 for an unconfigured one', async () => {
    const clock = new ManualClock()
    const rec = new Recorder()
    const control = new FakeControl(clock, { asr: asr.url })
    const dh = new DeepHealth({
      control,
      directory,
      pool: control.pool,
      connectivity: rec,
      events: rec,
      clock,
      logger: createLogger({ sink: new MemorySink() }),
      intervalS: 120,
      swapBusy: () => false,
      probes: DEEP_HEALTH_PROBES,
    })
    made.push(dh)
    const h = deepHealthHandlers(dh)
    const ctx = {} as Parameters<typeof h.getDeepHealth>[1]
    const run = await h.runDeepHealth({ service: 'asr' }, ctx)
    expect(run).toMatchObject({ service: 'asr', ok: true })
    const view = await h.getDeepHealth({}, ctx)
    expect(view.interval_s).toBe(120)
    expect(view.services.map((s) => [s.service, s.configured])).toEqual([
      ['asr', true],
      ['tts', false],
      ['llm', false],
    ])
    await expect(h.runDeepHealth({ service: 'whisper' }, ctx)).rejects.toMatchObject({ status: 404 })
    await expect(h.runDeepHealth({ service: 'tts' }, ctx)).rejects.toMatchObject({ status: 409 })
    expect(dh.requestProbe('tts', 'x')).toBe('unavailable')
  })

  it('has a sim asr whose wedge leaves /health answering and is cleared by a container start', async () => {
    asr.wedge()
    expect((await fetch(`${asr.url}/health`)).status).toBe(200)
    const fd = new FormData()
    fd.append('file', new Blob([new Uint8Array(silenceWav())]), 'a.wav')
    const res = await fetch(`${asr.url}/v1/audio/transcriptions`, { method: 'POST', body: fd })
    expect(res.status).toBe(500)
    expect(await res.text()).toMatch(/cudaErrorUnknown/)
    expect(asr.wedged).toBe(true)
    asr.containerStarted()
    expect(asr.wedged).toBe(false)
    const again = await fetch(`${asr.url}/v1/audio/transcriptions`, { method: 'POST', body: fd })
    expect(again.status).toBe(200)
  })

  it('probes when a card turns Unhealthy by its /health, not when its own failed probe made it Unhealthy', async () => {
    const { dh, rec } = rig()
    asr.wedge()
    // The card reads Unhealthy (deep health: wedged) while /health answers OK: that probe just ran.
    dh.statusChanged('asr', { label: 'Unhealthy', http_ok: true }, 'Healthy')
    dh.statusChanged('asr', { label: 'Healthy', http_ok: true }, 'Unhealthy')
    expect(dh.view().services.find((s) => s.service === 'asr')!.running).toBe(false)
    dh.statusChanged('asr', { label: 'Unhealthy', http_ok: false }, 'Healthy')
    await rec.until(1)
    expect(rec.results[0]).toMatchObject({ service: 'asr', ok: false, wedged: true })
    expect(dh.latest('asr')).toEqual(rec.results[0])
    expect(dh.latest('tts')).toBeNull()
  })

  it('writes nothing to disk: the module reaches no file API', () => {
    const src = fs.readFileSync(path.join(__dirname, '../../../src-main/services/deepHealth.ts'), 'utf8')
    expect(src).not.toMatch(/from '(node:)?fs(\/promises)?'|from '\.\.\/core\/files'/)
  })

  it('uses the spec’s limits: 60 s grace, 120 s cooldown, 3 per 30 min', () => {
    expect(RESTART_LIMITS).toEqual({ graceMs: 60_000, cooldownMs: 120_000, cap: 3, windowMs: 1_800_000 })
  })
})
