import { describe, expect, it } from 'vitest'
import { readDiarizedAsk, audioKind } from '../../../src-main/gateway/audio/diarizedAsk'
import { toSrt, toVtt } from '../../../src-shared/captions'
import { letterLabel, SAME_VOICE, VoiceBook } from '../../../src-main/gateway/audio/voiceBook'
import { parseWavHead, planChunks, CHUNK_S, OVERLAP_S } from '../../../src-main/gateway/audio/wavChunks'
import { fingerprint, heardFingerprint, toneWav } from '../../sim/http'

/** The parts of issue 43's pipeline: chunk plan, WAV layout, voice matching, the request and the cues. */
describe('diarized transcription parts', () => {
  it('plans 5-minute chunks overlapping by 4 s whose owned spans tile the recording without gaps', () => {
    const spans = planChunks(1800)
    expect(spans[0]).toMatchObject({ start: 0, end: CHUNK_S, ownFrom: -Infinity })
    expect(spans[1]!.start).toBe(CHUNK_S - OVERLAP_S)
    expect(spans.at(-1)!.end).toBe(1800)
    expect(spans.at(-1)!.ownTo).toBe(Infinity)
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.ownFrom).toBe(spans[i - 1]!.ownTo)
    expect(planChunks(200)).toHaveLength(1)
  })

  it('reads a WAV layout, and declines what is not RIFF/WAVE', () => {
    const wav = toneWav([{ hz: 220, seconds: 3 }], 8000)
    expect(parseWavHead(wav.subarray(0, 64), wav.length)).toMatchObject({ byteRate: 16000, dataOffset: 44, seconds: 3 })
    expect(parseWavHead(Buffer.from('ID3 not a wav file at all'), 100)).toBeNull()
  })

  it('matches voices across chunks by fingerprint, letters them in order of first speech, names known ones', () => {
    const book = new VoiceBook([{ name: 'agent', fingerprint: heardFingerprint(1, 7) }], 'letters')
    const first = book.match([
      { label: 'speaker_0', fingerprint: heardFingerprint(2, 1), seconds: 30 },
      { label: 'speaker_1', fingerprint: heardFingerprint(1, 1), seconds: 20 },
    ])
    // The next chunk hears them the other way round, with other noise.
    const second = book.match([
      { label: 'speaker_0', fingerprint: heardFingerprint(1, 2), seconds: 10 },
      { label: 'speaker_1', fingerprint: heardFingerprint(2, 2), seconds: 10 },
      { label: 'speaker_2', fingerprint: heardFingerprint(3, 2), seconds: 10 },
    ])
    expect(second.get('speaker_0')).toBe(first.get('speaker_1'))
    expect(second.get('speaker_1')).toBe(first.get('speaker_0'))
    expect(book.labelOf(first.get('speaker_0')!)).toBe('A')
    expect(book.labelOf(first.get('speaker_1')!)).toBe('agent')
    expect(book.labelOf(second.get('speaker_2')!)).toBe('B')
    expect(SAME_VOICE).toBe(0.7)
    // Different voices of the fake are far below the threshold, one voice heard twice far above.
    const cos = (a: number[], b: number[]): number =>
      a.reduce((s, x, i) => s + x * b[i]!, 0) / Math.hypot(...a) / Math.hypot(...b)
    expect(cos(fingerprint(0), fingerprint(1))).toBeLessThan(0.3)
    expect(cos(heardFingerprint(0, 1), heardFingerprint(0, 2))).toBeGreaterThan(0.8)
    expect([0, 25, 26, 27, 701].map(letterLabel)).toEqual(['A', 'Z', 'AA', 'AB', 'ZZ'])
  })

  it('reads which requests are diarized, the way the openai client sends them', () => {
    expect(readDiarizedAsk([['response_format', 'verbose_json']])).toBeNull()
    expect(readDiarizedAsk([['model', 'whisper-1']])).toBeNull()
    expect(
      readDiarizedAsk([
        ['response_format', 'diarized_json'],
        ['stream', 'true'],
      ]),
    ).toMatchObject({
      format: 'diarized_json',
      stream: true,
    })
    expect(
      readDiarizedAsk([
        ['model', 'gpt-4o-transcribe-diarize'],
        ['response_format', 'srt'],
      ])?.format,
    ).toBe('srt')
    expect(
      readDiarizedAsk([
        ['model', 'gpt-4o-transcribe-diarize'],
        ['response_format', 'verbose_json'],
      ]),
    ).toBeNull()
    const ref = `data:audio/wav;base64,${toneWav([{ hz: 220, seconds: 3 }]).toString('base64')}`
    const ask = readDiarizedAsk([
      ['known_speaker_names[]', 'agent'],
      ['known_speaker_references[]', ref],
      ['chunking_strategy[type]', 'server_vad'],
      ['chunking_strategy[threshold]', '0.5'],
    ])
    expect(ask?.references.map((r) => [r.name, r.seconds])).toEqual([['agent', 3]])
    expect(() =>
      readDiarizedAsk([
        ['response_format', 'diarized_json'],
        ['stream', 'maybe'],
      ]),
    ).toThrow(/stream/)
    expect(() =>
      readDiarizedAsk([
        ['response_format', 'diarized_json'],
        ['chunking_strategy[type]', 'server_vad'],
        ['chunking_strategy[threshold]', '3'],
      ]),
    ).toThrow(/chunking_strategy\.threshold/)
    expect(audioKind(Buffer.from('fLaC\0\0\0\x22 streaminfo'))).toBe('flac')
    expect(audioKind(Buffer.from('<html><body>no</body></html>'))).toBeNull()
  })

  it('writes SRT with the speaker in brackets and WebVTT with voice spans, escaped', () => {
    const blocks = [
      { start: 0.2, end: 1.75, speaker: 'A', text: 'Hello.' },
      { start: 3661.5, end: 3662, speaker: 'R&D <lead>', text: 'a < b' },
    ]
    expect(toSrt(blocks)).toBe(
      '1\n00:00:00,200 --> 00:00:01,750\n[A] Hello.\n\n2\n01:01:01,500 --> 01:01:02,000\n[R&D <lead>] a < b\n',
    )
    expect(toVtt(blocks)).toBe(
      'WEBVTT\n\n00:00:00.200 --> 00:00:01.750\n<v A>Hello.\n\n01:01:01.500 --> 01:01:02.000\n<v R&amp;D &lt;lead&gt;>a &lt; b\n',
    )
  })
})
