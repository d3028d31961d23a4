// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import PrebuiltPanel from '../../../src-renderer/components/services/PrebuiltPanel.vue'
import ServicesPanel from '../../../src-renderer/components/services/ServicesPanel.vue'
import { button, buttons, flush, mountWith, unmountAll } from './mount'

type Service = OutputOf<'listServices'>['services'][number]

function service(over: Partial<Service>): Service {
  return {
    name: 'asr',
    configured: true,
    host: '10.0.0.2',
    port: 9000,
    container: 'asr',
    container_state: 'running',
    restart_count: 0,
    started_at: null,
    http_ok: true,
    http_ms: 12,
    model: 'parakeet',
    base_url: 'http://10.0.0.1:8080/v1',
    upstream_url: 'http://10.0.0.2:9000',
    label: 'Healthy',
    label_reason: null,
    actions_blocked: null,
    error: null,
    deep_health: null,
    custom: false,
    node: 'node2',
    placement: null,
    recent_changes: [],
    ...over,
  }
}

type Push = (ev: OutputOf<'streamEvents'>) => void

function fakeApi(services: Service[]): {
  api: BackendApi
  calls: { method: string; input: unknown }[]
  pushes: Push[]
} {
  const calls: { method: string; input: unknown }[] = []
  const pushes: Push[] = []
  const api = {
    transport: 'http',
    call: async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'listServices') return { services, checked_at: 1 }
      if (method === 'serviceAction')
        return { ...(input as object), ok: true, container_state: 'running', detail: 'restart done (operator)' }
      if (method === 'serviceLogs') return { name: 'asr', container: 'asr', lines: ['one', 'Bearer ***'] }
      if (method === 'deleteService') return { deleted: true }
      if (method === 'prebuiltCatalog')
        return {
          images: [
            {
              id: 'parakeet-asr',
              name: 'Parakeet',
              kind: 'asr',
              image: 'nvcr.io/nim/nvidia/parakeet:1',
              container: 'parakeet-asr',
              port: 9000,
              volume: 'nim-cache',
              cache_path: '/opt/nim/.cache',
              env: { NIM_HTTP_API_PORT: '9000' },
              description: 'speech recognition',
              needs_registry_key: true,
            },
          ],
        }
      if (method === 'prebuiltInstall') return { job_id: 'prebuilt-1' }
      throw new Error(`unexpected ${method}`)
    },
    subscribe: (_method: string, _input: unknown, handlers: { onEvent: Push }) => {
      pushes.push(handlers.onEvent)
      return () => undefined
    },
  } as unknown as BackendApi
  return { api, calls, pushes }
}

describe('Services panel', () => {
  afterEach(() => unmountAll())

  it('shows labels, the restart counter only above 1, and Remove only for custom services', async () => {
    const { api } = fakeApi([
      service({ name: 'asr', restart_count: 1 }),
      service({ name: 'tts', label: 'Unhealthy', http_ok: false, restart_count: 4, error: 'HTTP 500 from /health' }),
      service({ name: 'whisper', custom: true, label: 'Stopped', container_state: 'exited' }),
    ])
    const el = await mountWith(ServicesPanel, api)
    const cards = [...el.querySelectorAll('article')]
    expect(cards.map((c) => c.querySelector('.badge')?.textContent)).toEqual(['Healthy', 'Unhealthy', 'Stopped'])
    expect(cards[0]!.textContent).not.toContain('restarts')
    expect(cards[1]!.textContent).toContain('4 restarts')
    expect(cards[1]!.textContent).toContain('HTTP 500 from /health')
    expect(buttons(cards[0]!, 'Remove')).toEqual([])
    expect(buttons(cards[2]!, 'Remove')).toHaveLength(1)
  })

  it('shows a service on an unreachable node as Unknown (node unreachable), its actions disabled with the reason', async () => {
    const blocked = 'node2 is unreachable over SSH: its container cannot be read, started or stopped until it answers'
    const { api } = fakeApi([
      service({
        label: 'Unknown',
        label_reason: 'node unreachable',
        container_state: 'unknown',
        actions_blocked: blocked,
      }),
    ])
    const el = await mountWith(ServicesPanel, api)
    const card = el.querySelector('article')!
    expect(card.querySelector('.badge')?.textContent).toBe('Unknown (node unreachable)')
    expect(button(card, 'Start').disabled).toBe(true)
    for (const b of ['Restart', 'Stop']) expect(button(card, b).disabled, b).toBe(true)
    expect(card.textContent).toContain(blocked)
  })

  it('shows the latest deep-health result on the card, and follows a probe and a state change live', async () => {
    const at = Date.UTC(2026, 0, 1, 12)
    const list = [
      service({
        label: 'Unhealthy',
        label_reason: 'deep health: wedged',
        error: 'HTTP 500 from /v1/audio/transcriptions: cudaErrorUnknown',
        deep_health: { ok: false, wedged: true, at, stale: false },
      }),
    ]
    const { api, calls, pushes } = fakeApi(list)
    const el = await mountWith(ServicesPanel, api)
    const card = el.querySelector('article')!
    expect(card.querySelector('.badge')?.textContent).toBe('Unhealthy (deep health: wedged)')
    expect(card.querySelector('[data-testid="card-deep-health"]')?.textContent).toMatch(/^wedged · /)
    expect(card.textContent).toContain('cudaErrorUnknown')

    // A new probe result: the list is read again, and the card shows what the daemon now says.
    list[0] = service({ deep_health: { ok: true, wedged: false, at: at + 1000, stale: false } })
    const reads = calls.filter((c) => c.method === 'listServices').length
    const push = pushes[0]!
    push({
      seq: 1,
      at,
      name: 'deephealth.result',
      data: {
        service: 'asr',
        ok: true,
        at: at + 1000,
        latency_ms: 5,
        error: null,
        note: null,
        wedged: false,
        restart: { requested: false, done: false, held_by: null, detail: null },
      },
    })
    await flush()
    expect(calls.filter((c) => c.method === 'listServices').length).toBe(reads + 1)
    expect(el.querySelector('article .badge')?.textContent).toBe('Healthy')
    expect(el.querySelector('[data-testid="card-deep-health"]')?.textContent).toMatch(/^ok · /)

    // A service.state event updates the card at once.
    const { custom: _c, node: _n, recent_changes: _r, ...status } = service({ label: 'Stopped', http_ok: false })
    push({ seq: 2, at, name: 'service.state', data: { service: 'asr', previous: 'Healthy', status } })
    await flush()
    expect(el.querySelector('article .badge')?.textContent).toBe('Stopped')
  })

  it('asks before a restart and runs it only after Confirm', async () => {
    const { api, calls } = fakeApi([service({})])
    const el = await mountWith(ServicesPanel, api)
    const card = el.querySelector('article')!
    button(card, 'Restart').click()
    await flush()
    expect(calls.filter((c) => c.method === 'serviceAction')).toEqual([])
    expect(card.textContent).toContain('Restart asr?')
    button(card, 'Confirm').click()
    await flush()
    expect(calls.filter((c) => c.method === 'serviceAction')).toEqual([
      { method: 'serviceAction', input: { name: 'asr', action: 'restart' } },
    ])
    expect(card.textContent).toContain('restart: done')
  })

  it("shows a placement's engine as its own card named by its placement: Restart re-places it, Logs read it, no Start or Stop", async () => {
    const placement = { id: 'node2', key: 'gemma', served: 'org/Gemma', nodes: ['node2'], state: 'ready' as const }
    const { api, calls } = fakeApi([
      service({ name: 'llm', node: 'node1', model: 'org/Big' }),
      service({ name: 'llm@node2', node: 'node2', model: 'org/Gemma', placement }),
    ])
    const el = await mountWith(ServicesPanel, api)
    const card = el.querySelector('article[aria-label="service llm@node2"]')!
    expect(card.querySelector('[data-testid="service-placement"]')?.textContent).toBe(
      'org/Gemma (gemma) on node2, solo',
    )
    expect(el.querySelector('article[aria-label="service llm"] [data-testid="service-placement"]')).toBeNull()
    expect(buttons(card, 'Start')).toEqual([])
    expect(buttons(card, 'Stop')).toEqual([])
    button(card, 'Restart').click()
    await flush()
    expect(card.textContent).toContain('org/Gemma (gemma) is placed again on node2, solo')
    button(card, 'Confirm').click()
    await flush()
    expect(calls.filter((c) => c.method === 'serviceAction').map((c) => c.input)).toEqual([
      { name: 'llm@node2', action: 'restart' },
    ])
    expect(card.textContent).toContain('restart: started')
    button(card, 'Logs').click()
    await flush()
    expect(calls.find((c) => c.method === 'serviceLogs')?.input).toEqual({ name: 'llm@node2', tail: 200 })
  })

  it('shows the log tail', async () => {
    const { api, calls } = fakeApi([service({})])
    const el = await mountWith(ServicesPanel, api)
    button(el, 'Logs').click()
    await flush()
    expect(calls.find((c) => c.method === 'serviceLogs')?.input).toEqual({ name: 'asr', tail: 200 })
    expect(el.querySelector('pre')?.textContent).toBe('one\nBearer ***')
  })
})

describe('Prebuilt panel', () => {
  afterEach(() => unmountAll())

  it('fills the form from the catalog and installs with the env parsed', async () => {
    const { api, calls } = fakeApi([])
    const el = await mountWith(PrebuiltPanel, api)
    expect(el.textContent).toContain('nvcr.io/nim/nvidia/parakeet:1')
    // No empty form until asked for: choosing an image (or "Install a service") opens it.
    expect(el.querySelector('form')).toBeNull()
    expect(buttons(el, 'Install a service')).toHaveLength(1)
    button(el, 'Use').click()
    await flush()
    el.querySelector('form')!.dispatchEvent(new Event('submit'))
    await flush()
    expect(calls.find((c) => c.method === 'prebuiltInstall')?.input).toEqual({
      image: 'nvcr.io/nim/nvidia/parakeet:1',
      container: 'parakeet-asr',
      volume: 'nim-cache',
      cache_path: '/opt/nim/.cache',
      port: 9000,
      env: { NIM_HTTP_API_PORT: '9000' },
      node: 'node2',
      role: null,
    })
    expect(el.textContent).toContain('Starting')
  })
})
