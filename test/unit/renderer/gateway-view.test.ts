// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { button, flush, mountWith, unmountAll } from './mount'
import GatewayView from '../../../src-renderer/views/GatewayView.vue'

// The histogram's chart: record what it is given instead of drawing on a canvas happy-dom lacks.
const plots: { data: unknown[][] }[] = []
vi.mock('uplot', () => ({
  default: class {
    static paths = { bars: () => () => null }
    data: unknown[][]
    constructor(_opts: unknown, data: unknown[][]) {
      this.data = data
      plots.push(this)
    }
    setData(d: unknown[][]): void {
      this.data = d
    }
    destroy(): void {}
  },
}))

const T = Date.UTC(2026, 0, 1, 12)
const answers: Record<string, unknown> = {
  gatewayInfo: {
    base_urls: ['http://10.0.0.5:9999'],
    consumer_key_required: true,
    upstreams: [
      { name: 'llm', url: 'http://10.0.0.11:8888', hint: null },
      { name: 'vector', url: null, hint: 'vector store is not configured: set VECTOR_URL' },
    ],
    endpoints: [{ method: 'POST', path: '/v1/chat/completions', summary: 'forwarded verbatim' }],
  },
  gatewayRequests: {
    requests: [
      {
        seq: 2,
        at: T,
        method: 'POST',
        path: '/v1/chat/completions',
        status: 200,
        latency_ms: 812.4,
        ttfb_ms: 3.2,
        bytes: 2048,
        streamed: true,
        aborted: false,
        playground: true,
        placement: 'node2',
      },
      {
        seq: 1,
        at: T,
        method: 'POST',
        path: '/v1/audio/transcriptions',
        status: 503,
        latency_ms: 12,
        ttfb_ms: 12,
        bytes: 200,
        streamed: false,
        aborted: false,
        playground: false,
      },
    ],
    histogram: { bounds_ms: [10, 1000], counts: [1, 1, 0] },
    total: 2,
  },
  gatewayUpstreams: {
    upstreams: [
      { name: 'llm', url: 'http://10.0.0.11:8888', state: 'up', latency_ms: 4.2, detail: 'HTTP 200' },
      { name: 'vector', url: null, state: 'not_configured', latency_ms: null, detail: 'set VECTOR_URL' },
    ],
    llm_model: 'Qwen/Qwen3-32B',
    llm_models: [
      { id: 'Qwen/Qwen3-32B', placement: 'node1' },
      { id: 'qwen3-32b', placement: 'node1' },
      { id: 'nvidia/Gemma-4-26B-A4B-NVFP4', placement: 'node2' },
    ],
  },
  gatewayVoices: {
    voices: [
      { id: 'Multivoice.EN-US.Aria', language: 'en-US' },
      { id: 'Multivoice.DE-DE.Lena', language: 'de-DE' },
    ],
    error: null,
  },
  playgroundSpeech: { audio_base64: btoa('RIFF0000WAVE'), content_type: 'audio/wav', bytes: 12, latency_ms: 5 },
}

function fakeApi(calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'ipc',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      return answers[method]
    }) as BackendApi['call'],
    subscribe: ((method: string, input: unknown, h: { onEvent(e: unknown): void; onEnd?(): void }) => {
      calls.push({ method, input })
      queueMicrotask(() => {
        h.onEvent({ type: 'delta', text: 'You said:' })
        h.onEvent({ type: 'delta', text: ' hi' })
        h.onEvent({ type: 'done', model: 'm', chunks: 2, ttfb_ms: 3, total_ms: 9 })
        h.onEnd?.()
      })
      return () => undefined
    }) as BackendApi['subscribe'],
  }
}

afterEach(unmountAll)

const mount = (calls: { method: string; input: unknown }[]): Promise<HTMLElement> =>
  mountWith(GatewayView, fakeApi(calls))

describe('Gateway view', () => {
  it('starts with Try it, then live snippets, the request log, the keys and the reference', async () => {
    const el = await mount([])
    const order = [...el.querySelectorAll('section > .card, section > div.card')].map(
      (c) => c.querySelector('h2')?.textContent,
    )
    expect(order).toEqual([
      'Try it',
      'Use it from your code',
      'Live requests',
      'Consumer keys',
      'Usage per key',
      'Reference',
    ])
  })

  it('fills the snippets with the base URL, the loaded model, a real voice and the key header', async () => {
    const el = await mount([])
    const text = el.textContent ?? ''
    expect(text).toContain('http://10.0.0.5:9999/v1')
    expect(text).toContain('A consumer key')
    const chat = el.querySelector('[data-testid="snippet-chat"] pre')?.textContent ?? ''
    expect(chat).toContain(
      'curl -N http://10.0.0.5:9999/v1/chat/completions \\\n  -H "Authorization: Bearer $TANDEM_API_KEY"',
    )
    expect(chat).toContain('"model": "Qwen/Qwen3-32B"')
    expect(chat).not.toContain('<')
    const speech = el.querySelector('[data-testid="snippet-speech"] pre')?.textContent ?? ''
    expect(speech).toContain('"voice": "Multivoice.EN-US.Aria"')
    const py = el.querySelector('[data-testid="snippet-python"] pre')?.textContent ?? ''
    expect(py).toContain('OpenAI(base_url="http://10.0.0.5:9999/v1", api_key=os.environ["TANDEM_API_KEY"])')
    expect(py).toContain('voice="Multivoice.EN-US.Aria"')
  })

  it('shows each upstream with its live health and latency', async () => {
    const el = await mount([])
    const llm = el.querySelector('[data-testid="upstream-llm"]')?.textContent ?? ''
    expect(llm).toContain('up')
    expect(llm).toContain('4.2 ms')
    const vector = el.querySelector('[data-testid="upstream-vector"]')?.textContent ?? ''
    expect(vector).toContain('not configured')
    expect(vector).toContain('vector store is not configured: set VECTOR_URL')
  })

  it('lists the last requests and feeds the histogram', async () => {
    const el = await mount([])
    const rows = [...el.querySelectorAll('.gw-log tbody tr')].map((r) => r.textContent ?? '')
    expect(rows).toHaveLength(2)
    expect(rows[0]).toContain('/v1/chat/completions')
    expect(rows[0]).toContain('812.4 ms')
    expect(rows[0]).toContain('2.0 KB')
    expect(rows[0]).toContain('yes')
    expect(rows[0]).toContain('playground')
    expect(rows[1]).not.toContain('playground')
    expect(rows[1]).toContain('503')
    expect(plots.at(-1)!.data).toEqual([
      [0, 1, 2],
      [1, 1, 0],
    ])
  })

  it('streams a chat answer into the playground and plays synthesized speech', async () => {
    const calls: { method: string; input: unknown }[] = []
    URL.createObjectURL = () => 'blob:wav'
    URL.revokeObjectURL = () => undefined
    const el = await mount(calls)
    const send = button(el, 'Send')
    send.click()
    await flush()
    expect(el.querySelector('.gw-answer')!.textContent).toBe('You said: hi')
    expect(calls.find((c) => c.method === 'playgroundChat')!.input).toEqual({
      prompt: 'Say hello to the cluster.',
      model: 'Qwen/Qwen3-32B',
    })

    // The model picker, then the speech playground's language and voice.
    const voice = el.querySelectorAll('select')[2] as HTMLSelectElement
    expect([...voice.options].map((o) => o.value)).toEqual(['Multivoice.EN-US.Aria', 'Multivoice.DE-DE.Lena'])
    const speak = button(el, 'Speak')
    speak.click()
    await flush()
    expect(calls.find((c) => c.method === 'playgroundSpeech')!.input).toMatchObject({ voice: 'Multivoice.EN-US.Aria' })
    expect(el.querySelector('audio')!.getAttribute('src')).toBe('blob:wav')
  })

  it('picks among the served models: the chat asks the one picked and the snippets name it', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mount(calls)
    const picker = el.querySelector<HTMLSelectElement>('#gw-model')!
    expect(el.querySelector('label[for="gw-model"]')!.textContent).toBe('Model')
    expect([...picker.options].map((o) => o.textContent?.trim())).toEqual([
      'Qwen/Qwen3-32B (node1)',
      'qwen3-32b (node1)',
      'nvidia/Gemma-4-26B-A4B-NVFP4 (node2)',
    ])
    expect(picker.value).toBe('Qwen/Qwen3-32B')
    picker.value = 'nvidia/Gemma-4-26B-A4B-NVFP4'
    picker.dispatchEvent(new Event('change'))
    await flush()
    const chat = el.querySelector('[data-testid="snippet-chat"] pre')?.textContent ?? ''
    expect(chat).toContain('"model": "nvidia/Gemma-4-26B-A4B-NVFP4"')
    const py = el.querySelector('[data-testid="snippet-python"] pre')?.textContent ?? ''
    expect(py).toContain('model="nvidia/Gemma-4-26B-A4B-NVFP4"')
    button(el, 'Send').click()
    await flush()
    expect(calls.find((c) => c.method === 'playgroundChat')!.input).toEqual({
      prompt: 'Say hello to the cluster.',
      model: 'nvidia/Gemma-4-26B-A4B-NVFP4',
    })
  })

  it('shows the placement that served each logged request', async () => {
    const el = await mount([])
    expect(el.querySelector('.gw-log thead')!.textContent).toContain('placement')
    const cells = [...el.querySelectorAll('[data-testid="log-placement"]')].map((c) => c.textContent?.trim())
    expect(cells).toEqual(['node2', '—'])
  })

  it('gives every Copy button its own accessible name saying what it copies', async () => {
    const el = await mount([])
    const names = [...el.querySelectorAll('button')]
      .filter((b) => b.textContent?.trim() === 'Copy')
      .map((b) => b.getAttribute('aria-label'))
    expect(names).toEqual([
      'Copy the streaming chat curl command',
      'Copy the speech curl command',
      'Copy the transcription curl command',
      'Copy the Python snippet',
      'Copy the base URL http://10.0.0.5:9999/v1',
    ])
  })

  it('imports os in the Python snippet only when it reads the key from the environment', async () => {
    const el = await mount([])
    const py = el.querySelector('[data-testid="snippet-python"] pre')?.textContent ?? ''
    expect(py.startsWith('import os\nfrom openai import OpenAI')).toBe(true)
    unmountAll()
    const open = { ...(answers.gatewayInfo as object), consumer_key_required: false }
    const saved = answers.gatewayInfo
    answers.gatewayInfo = open
    try {
      const el2 = await mount([])
      const py2 = el2.querySelector('[data-testid="snippet-python"] pre')?.textContent ?? ''
      expect(py2.startsWith('from openai import OpenAI')).toBe(true)
      expect(py2).not.toContain('import os')
      expect(py2).toContain('api_key="none"')
    } finally {
      answers.gatewayInfo = saved
    }
  })
})
