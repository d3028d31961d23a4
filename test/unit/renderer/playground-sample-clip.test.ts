// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import { flush, mountWith, unmountAll } from './mount'
import PlaygroundTranscribe from '../../../src-renderer/components/gateway/PlaygroundTranscribe.vue'
import SpeakerTimeline from '../../../src-renderer/components/gateway/SpeakerTimeline.vue'
import { sampleClipWav } from '../../../src-renderer/components/gateway/sampleClip'

/** Issue 31 #9: a clip with no speech says so, and there is a sample clip to try. */
type Transcript = OutputOf<'playgroundTranscribe'>
const silent: Transcript = {
  duration: 1.2,
  language: 'en',
  speakers_detected: [],
  segments: [],
  models: { transcription: 'asr', diarization: 'diar' },
} as unknown as Transcript

function fakeApi(answer: Transcript, calls: { method: string; input: Record<string, string> }[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, string>) => {
      calls.push({ method, input })
      return answer
    }) as BackendApi['call'],
    subscribe: (() => () => undefined) as BackendApi['subscribe'],
  }
}

afterEach(() => unmountAll())

describe('the sample clip', () => {
  it('is a real PCM WAV (RIFF header, 16-bit mono) of a few seconds, not silence', () => {
    const wav = sampleClipWav()
    const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength)
    const ascii = (at: number) => String.fromCharCode(...wav.subarray(at, at + 4))
    expect(ascii(0)).toBe('RIFF')
    expect(ascii(8)).toBe('WAVE')
    expect(view.getUint16(20, true)).toBe(1)
    expect(view.getUint16(22, true)).toBe(1)
    expect(view.getUint16(34, true)).toBe(16)
    const rate = view.getUint32(24, true)
    const seconds = view.getUint32(40, true) / (rate * 2)
    expect(seconds).toBeGreaterThanOrEqual(4)
    expect(seconds).toBeLessThanOrEqual(10)
    let peak = 0
    for (let i = 44; i < wav.length; i += 2) peak = Math.max(peak, Math.abs(view.getInt16(i, true)))
    expect(peak).toBeGreaterThan(1000)
  })

  it('is offered in the playground and sent like any recording', async () => {
    const calls: { method: string; input: Record<string, string> }[] = []
    const el = await mountWith(PlaygroundTranscribe, fakeApi(silent, calls))
    const sample = el.querySelector<HTMLButtonElement>('[data-testid="sample-clip"]')!
    expect(sample.textContent).toContain('sample clip')
    sample.click()
    await flush()
    await flush()
    expect(calls[0]?.method).toBe('playgroundTranscribe')
    expect(calls[0]?.input.filename).toBe('sample-test-tone.wav')
    expect(atob(calls[0]!.input.audio_base64!).slice(0, 4)).toBe('RIFF')
  })
})

describe('a clip with no speech', () => {
  it('says "No speech found in this clip" instead of "0 speakers" and nothing', async () => {
    const el = await mountWith(SpeakerTimeline, fakeApi(silent, []), { transcript: silent })
    expect(el.querySelector('[data-testid="no-speech"]')?.textContent).toContain('No speech found in this clip')
    expect(el.textContent).not.toContain('0 speakers')
  })
})
