// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import DeepHealthPanel from '../../../src-renderer/components/services/DeepHealthPanel.vue'
import { flush, mountWith, unmountAll } from './mount'

type Result = OutputOf<'runDeepHealth'>

function result(over: Partial<Result> = {}): Result {
  return {
    service: 'asr',
    ok: true,
    at: Date.UTC(2026, 0, 1, 12),
    latency_ms: 42,
    error: null,
    note: null,
    wedged: false,
    restart: { requested: false, done: false, held_by: null, detail: null },
    ...over,
  }
}

function view(): OutputOf<'getDeepHealth'> {
  return {
    interval_s: 300,
    services: [
      {
        service: 'asr',
        configured: true,
        running: false,
        last: result({
          ok: false,
          wedged: true,
          error: 'HTTP 500 from /v1/audio/transcriptions: CUDA error: cudaErrorUnknown',
          restart: { requested: true, done: false, held_by: 'cooldown', detail: 'last auto-restart 70 s ago' },
        }),
        restarts_last_30m: 1,
        last_restart_at: Date.UTC(2026, 0, 1, 11, 59),
        total_restarts: 2,
      },
      {
        service: 'tts',
        configured: false,
        running: false,
        last: null,
        restarts_last_30m: 0,
        last_restart_at: null,
        total_restarts: 0,
      },
      {
        service: 'llm',
        configured: true,
        running: false,
        last: result({ service: 'llm', note: 'no model currently loaded (idle)' }),
        restarts_last_30m: 0,
        last_restart_at: null,
        total_restarts: 0,
      },
    ],
  }
}

function fakeApi() {
  const calls: { method: string; input: unknown }[] = []
  let push: ((e: unknown) => void) | null = null
  const api = {
    transport: 'http',
    call: async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'getDeepHealth') return view()
      if (method === 'runDeepHealth') return result({ at: Date.UTC(2026, 0, 1, 13), latency_ms: 7 })
      throw new Error(`unexpected ${method}`)
    },
    subscribe: (method: string, _input: unknown, h: { onEvent: (e: unknown) => void }) => {
      if (method === 'streamEvents') push = h.onEvent
      return () => (push = null)
    },
  } as unknown as BackendApi
  return { api, calls, push: (e: unknown) => push?.(e) }
}

const row = (el: HTMLElement, service: string): HTMLElement =>
  el.querySelector(`tr[data-service="${service}"]`) as HTMLElement

describe('Deep health panel', () => {
  afterEach(() => unmountAll())

  it('shows per service the last result, latency, error excerpt, note, counters and the limit that held a restart', async () => {
    const { api } = fakeApi()
    const el = await mountWith(DeepHealthPanel, api)
    const asr = row(el, 'asr').textContent ?? ''
    expect(asr).toContain('wedged')
    expect(asr).toContain('42 ms')
    expect(asr).toContain('cudaErrorUnknown')
    expect(asr).toMatch(/held back by the cooldown/)
    expect(asr).toContain('1 / 2')
    expect(row(el, 'llm').textContent).toContain('no model currently loaded (idle)')
    expect(row(el, 'tts').textContent).toContain('not configured')
    expect(row(el, 'tts').querySelector('button')?.disabled).toBe(true)
  })

  it('a done or failed auto-restart says so once: the outcome, then what the daemon did', async () => {
    const withRestart = (restart: Result['restart']): BackendApi =>
      ({
        transport: 'http',
        call: async () => {
          const v = view()
          v.services[0]!.last = result({ ok: false, wedged: true, error: 'HTTP 500: boom', restart })
          return v
        },
        subscribe: () => () => undefined,
      }) as unknown as BackendApi
    // The badge, then the detail line beneath it.
    const cell = (el: HTMLElement): string =>
      [...(row(el, 'asr').querySelector('[data-label="Auto-restart"]')?.children ?? [])]
        .map((c) => c.textContent?.trim())
        .join(' ')
    // The detail as the daemon words it (deepHealth.ts): what it restarted, and the wedge.
    let el = await mountWith(
      DeepHealthPanel,
      withRestart({ requested: true, done: true, held_by: null, detail: 'restarted asr (HTTP 500: boom)' }),
    )
    expect(cell(el)).toBe('done restarted asr (HTTP 500: boom)')
    expect(cell(el)).not.toMatch(/restarted restarted/)
    unmountAll()
    el = await mountWith(
      DeepHealthPanel,
      withRestart({ requested: true, done: false, held_by: null, detail: 'restart failed: node2 unreachable' }),
    )
    expect(cell(el)).toBe('failed restart failed: node2 unreachable')
    expect(row(el, 'asr').querySelector('[data-label="Auto-restart"] .badge.bad')).not.toBeNull()
  })

  it('runs a probe now and shows its result', async () => {
    const { api, calls } = fakeApi()
    const el = await mountWith(DeepHealthPanel, api)
    row(el, 'asr').querySelector('button')!.click()
    await flush()
    expect(calls).toContainEqual({ method: 'runDeepHealth', input: { service: 'asr' } })
    const asr = row(el, 'asr').textContent ?? ''
    expect(asr).toContain('ok')
    expect(asr).toContain('7 ms')
    expect(asr).not.toContain('cudaErrorUnknown')
  })

  it('follows deephealth.result push events live', async () => {
    const { api, push, calls } = fakeApi()
    const el = await mountWith(DeepHealthPanel, api)
    push({
      seq: 1,
      at: 1,
      name: 'deephealth.result',
      data: result({
        service: 'llm',
        ok: false,
        at: Date.UTC(2026, 0, 1, 14),
        latency_ms: 900,
        error: 'HTTP 500 from /v1/completions: boom',
        wedged: true,
        restart: { requested: true, done: false, held_by: 'swap', detail: 'a model swap holds the llm' },
      }),
    })
    await flush()
    const llm = row(el, 'llm').textContent ?? ''
    expect(llm).toContain('900 ms')
    expect(llm).toMatch(/held back by a model swap/)
    // A done restart re-reads the counters.
    const reads = calls.filter((c) => c.method === 'getDeepHealth').length
    push({
      seq: 2,
      at: 2,
      name: 'deephealth.result',
      data: result({
        at: Date.UTC(2026, 0, 1, 15),
        ok: false,
        wedged: true,
        restart: { requested: true, done: true, held_by: null, detail: 'restarted asr' },
      }),
    })
    await flush()
    expect(calls.filter((c) => c.method === 'getDeepHealth').length).toBe(reads + 1)
  })

  it('re-reads the rows when a placement comes or goes, or a placement’s result has no row yet', async () => {
    const { api, push, calls } = fakeApi()
    await mountWith(DeepHealthPanel, api)
    const reads = (): number => calls.filter((c) => c.method === 'getDeepHealth').length
    const before = reads()
    const placed = (ids: string[]) => ({
      placements: ids.map((id) => ({ id })),
      nodes: [],
      changing: null,
      job: null,
    })
    // node1's placement is the llm row: nothing new to show.
    push({ seq: 1, at: 1, name: 'placements.changed', data: placed(['node1+node2']) })
    await flush()
    expect(reads()).toBe(before)
    push({ seq: 2, at: 2, name: 'placements.changed', data: placed(['node1+node2', 'node3']) })
    await flush()
    expect(reads()).toBe(before + 1)
    push({ seq: 3, at: 3, name: 'deephealth.result', data: result({ service: 'llm@node4' }) })
    await flush()
    expect(reads()).toBe(before + 2)
  })
})
