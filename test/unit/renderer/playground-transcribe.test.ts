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

describe('transcription playground: speakers by name and subtitles (issue 43)', () => {
  it('sends named reference clips with the recording, and offers the transcript as .srt and .vtt', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(PlaygroundTranscribe, fakeApi(calls))
    const files = el.querySelectorAll('input[type="file"]')
    Object.defineProperty(files[0], 'files', { value: [new File([new Uint8Array([1, 2, 3])], 'meeting.wav')] })
    files[0]!.dispatchEvent(new Event('change'))
    ;(el.querySelector('[data-testid="add-speaker"]') as HTMLButtonElement).click()
    await flush()
    const name = el.querySelector('input[aria-label="Speaker 1 name"]') as HTMLInputElement
    name.value = 'agent'
    name.dispatchEvent(new Event('input'))
    await flush()
    const clip = el.querySelector('input[aria-label="Speaker 1 reference clip"]') as HTMLInputElement
    Object.defineProperty(clip, 'files', { value: [new File([new Uint8Array([9, 8])], 'agent.wav')] })
    clip.dispatchEvent(new Event('change'))
    await flush()
    ;(el.querySelector('form') as HTMLFormElement).dispatchEvent(new Event('submit'))
    await flush()
    await flush()
    await flush()
    expect(calls).toEqual([
      {
        method: 'playgroundTranscribe',
        input: {
          audio_base64: btoa('\x01\x02\x03'),
          filename: 'meeting.wav',
          known_speakers: [{ name: 'agent', audio_base64: btoa('\x09\x08') }],
        },
      },
    ])
    // At most 4 speakers.
    for (let i = 0; i < 5; i++) {
      ;(el.querySelector('[data-testid="add-speaker"]') as HTMLButtonElement).click()
      await flush()
    }
    expect(el.querySelectorAll('input[aria-label$="name"]').length).toBe(4)
    // The subtitles: the speaker in each cue.
    const saved: { name: string; text: Promise<string> }[] = []
    const realCreate = URL.createObjectURL
    URL.createObjectURL = ((b: Blob) => {
      saved.push({ name: '', text: b.text() })
      return 'blob:x'
    }) as typeof URL.createObjectURL
    const click = HTMLAnchorElement.prototype.click
    HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
      saved.at(-1)!.name = this.download
    }
    try {
      const buttons = [...el.querySelectorAll('[data-testid="caption-downloads"] button')] as HTMLButtonElement[]
      expect(buttons.map((b) => b.textContent?.trim())).toEqual(['Download .srt', 'Download .vtt'])
      buttons.forEach((b) => b.click())
      expect(saved.map((s) => s.name)).toEqual(['meeting.srt', 'meeting.vtt'])
      expect(await saved[0]!.text).toBe('1\n00:00:00,000 --> 00:00:00,900\n[SPEAKER_00] hello\n')
      expect(await saved[1]!.text).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:00.900\n<v SPEAKER_00>hello\n')
    } finally {
      URL.createObjectURL = realCreate
      HTMLAnchorElement.prototype.click = click
    }
  })
})
