// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { flush, mountWith, unmountAll } from './mount'
import PlaygroundTranscribe from '../../../src-renderer/components/gateway/PlaygroundTranscribe.vue'

/**
 * Issue 33 #8: the admin session is no credential on the gateway, so the browser playground sends
 * a recording up to 8 MiB to its own control route, never to the consumer endpoint.
 */
const transcript = {
  duration: 1,
  language: 'en',
  speakers_detected: ['SPEAKER_00'],
  segments: [{ start_ms: 0, end_ms: 900, speaker: 'SPEAKER_00', text: 'hello' }],
  models: { transcription: 'asr', diarization: 'diar' },
}

function fakeApi(calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      return transcript
    }) as BackendApi['call'],
    subscribe: (() => () => undefined) as BackendApi['subscribe'],
  }
}

const realFetch = globalThis.fetch
afterEach(() => {
  unmountAll()
  globalThis.fetch = realFetch
})

describe('transcription playground in a browser', () => {
  it('sends a short recording to the playground route with the session, not to the gateway', async () => {
    const fetched: string[] = []
    globalThis.fetch = (async (url: string) => {
      fetched.push(url)
      return new Response('{}', { status: 401 })
    }) as typeof fetch
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(PlaygroundTranscribe, fakeApi(calls))
    const input = el.querySelector('input[type="file"]') as HTMLInputElement
    Object.defineProperty(input, 'files', { value: [new File([new Uint8Array([1, 2, 3])], 'take 1.wav')] })
    input.dispatchEvent(new Event('change'))
    await flush()
    ;(el.querySelector('form') as HTMLFormElement).dispatchEvent(new Event('submit'))
    await flush()
    await flush()
    expect(fetched).toEqual([])
    expect(calls).toEqual([
      { method: 'playgroundTranscribe', input: { audio_base64: btoa('\x01\x02\x03'), filename: 'take 1.wav' } },
    ])
  })
})
