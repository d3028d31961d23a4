import { describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import {
  defaultAliases,
  OPENAI_VOICES,
  parseSpeech,
  parseVoiceAliases,
  VoiceAliases,
  WavSeconds,
  wavSamples,
} from '../../../src-main/gateway/audio/speech'
import { simVoices } from '../../sim/http/tts'

/** Issue 8: OpenAI voice names, `response_format: "pcm"`, and a clear 400 for other formats. */

function caught(fn: () => unknown): ApiError {
  try {
    fn()
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  throw new Error('expected an ApiError')
}

describe('speech request', () => {
  it('takes wav, pcm or no response_format', () => {
    expect(parseSpeech({ voice: 'alloy', input: 'hi' }).response_format).toBeUndefined()
    expect(parseSpeech({ voice: 'alloy', input: 'hi', response_format: 'wav' }).response_format).toBe('wav')
    expect(parseSpeech({ voice: 'alloy', input: 'hi', response_format: 'pcm' }).response_format).toBe('pcm')
  })

  it('refuses any other format with a 400 naming wav and pcm and the field', () => {
    for (const format of ['mp3', 'opus', 'flac', 'aac']) {
      const err = caught(() => parseSpeech({ voice: 'alloy', input: 'hi', response_format: format }))
      expect(err.status).toBe(400)
      expect(err.message).toContain(`"${format}"`)
      expect(err.message).toMatch(/"wav".*"pcm"/)
      expect(err.param).toBe('response_format')
    }
  })

  it('names the field at fault', () => {
    expect(caught(() => parseSpeech({ voice: 'alloy', input: '' })).param).toBe('input')
    expect(caught(() => parseSpeech({ voice: 'alloy', input: 'hi', speed: 9 })).param).toBe('speed')
  })
})

describe('voice aliases', () => {
  it('reads TTS_VOICE_ALIASES entry by entry, reporting and skipping malformed ones', () => {
    const { aliases, problems } = parseVoiceAliases(
      ' alloy = Multivoice.EN-US.Aria ,Echo=Multivoice.DE-DE.Lena,, fable, onyx=NoLocale, a.b=Multivoice.EN-US.Leo, alloy=Multivoice.EN-GB.Isla',
    )
    expect([...aliases]).toEqual([
      ['alloy', 'Multivoice.EN-US.Aria'],
      ['echo', 'Multivoice.DE-DE.Lena'],
    ])
    expect(problems).toHaveLength(4)
    expect(problems[0]).toMatch(/^"fable": voice: the voice must be a voice id/)
    expect(problems[1]).toMatch(/^"onyx=NoLocale": voice:/)
    expect(problems[2]).toMatch(/^"a\.b=Multivoice\.EN-US\.Leo": alias:/)
    expect(problems[3]).toMatch(/alloy is given twice/)
  })

  it('picks defaults from the voice list deterministically: English first, plain before styled', () => {
    const voices = simVoices()
    const picked = defaultAliases(voices)
    expect([...picked.keys()]).toEqual([...OPENAI_VOICES])
    expect(picked.get('alloy')).toBe('Multivoice.EN-US.Aria')
    expect(picked.get('echo')).toBe('Multivoice.EN-US.Diego')
    expect(picked.get('coral')).toBe('Multivoice.EN-US.Sofia')
    // en-US has nine plain voices; the next two names get other English voices.
    expect(picked.get('sage')).toBe('Multivoice.EN-GB.Amelia')
    expect(picked.get('verse')).toBe('Multivoice.EN-GB.Harry')
    expect(defaultAliases([...voices].reverse())).toEqual(picked)
    // Fewer voices than names: handed out again from the start.
    expect(defaultAliases(['Multivoice.FR-FR.Louise', 'Multivoice.EN-GB.Isla']).get('fable')).toBe(
      'Multivoice.EN-GB.Isla',
    )
    expect(defaultAliases([]).size).toBe(0)
  })

  it('resolves OpenAI names, configured aliases and voice ids to a voice and its language', async () => {
    const v = new VoiceAliases(new Map([['echo', 'Multivoice.DE-DE.Lena']]), async () => simVoices())
    const base = { input: 'hi' }
    expect(await v.resolve({ ...base, voice: 'alloy' })).toMatchObject({
      voice: 'Multivoice.EN-US.Aria',
      language: 'en-US',
    })
    expect(await v.resolve({ ...base, voice: 'Echo' })).toMatchObject({
      voice: 'Multivoice.DE-DE.Lena',
      language: 'de-DE',
    })
    expect(await v.resolve({ ...base, voice: 'Multivoice.JA-JP.Yui' })).toMatchObject({ language: 'ja-JP' })
    const err = await v.resolve({ ...base, voice: 'robot' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).status).toBe(400)
    expect((err as ApiError).param).toBe('voice')
    expect((err as ApiError).message).toMatch(/alloy, echo/)
  })

  it('lists configured aliases even when the tts is down', async () => {
    const down = new VoiceAliases(new Map([['echo', 'Multivoice.DE-DE.Lena']]), async () => {
      throw new ApiError('upstream_unreachable', 'tts is unreachable')
    })
    expect(await down.table()).toEqual([{ alias: 'echo', voice: 'Multivoice.DE-DE.Lena', source: 'setting' }])
    const err = await down.resolve({ input: 'hi', voice: 'alloy' }).catch((e: unknown) => e)
    expect((err as ApiError).status).toBe(502)
  })
})

/** A RIFF/WAVE file from its chunks, each padded to an even length as RIFF requires. */
function riff(chunks: [string, Buffer][]): Buffer {
  const parts: Buffer[] = [Buffer.from('WAVE', 'latin1')]
  for (const [id, body] of chunks) {
    const head = Buffer.alloc(8)
    head.write(id, 0, 'latin1')
    head.writeUInt32LE(body.length, 4)
    parts.push(head, body, Buffer.alloc(body.length % 2))
  }
  const rest = Buffer.concat(parts)
  const head = Buffer.alloc(8)
  head.write('RIFF', 0, 'latin1')
  head.writeUInt32LE(rest.length, 4)
  return Buffer.concat([head, rest])
}

function fmt(rate: number): Buffer {
  const b = Buffer.alloc(16)
  b.writeUInt16LE(1, 0)
  b.writeUInt16LE(1, 2)
  b.writeUInt32LE(rate, 4)
  b.writeUInt32LE(rate * 2, 8)
  b.writeUInt16LE(2, 12)
  b.writeUInt16LE(16, 14)
  return b
}

async function* pieces(b: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size)
}

async function collect(src: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const c of src) out.push(c)
  return Buffer.concat(out)
}

describe('WAV to PCM', () => {
  const samples = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251))

  it('skips every chunk before data, odd-sized ones with their pad byte, whatever the chunking', async () => {
    const wav = riff([
      ['fmt ', fmt(24000)],
      ['LIST', Buffer.from('INFOISFT\x05\x00\x00\x00Lavf\x00', 'latin1')], // 17 bytes: padded
      ['fact', Buffer.alloc(4)],
      ['data', samples],
    ])
    expect(wav.length).toBeGreaterThan(44 + samples.length)
    for (const size of [1, 7, 44, 4096]) {
      const { format, samples: out } = await wavSamples(pieces(wav, size))
      expect(format, String(size)).toEqual({ sampleRate: 24000, channels: 1, bitsPerSample: 16 })
      expect((await collect(out)).equals(samples), String(size)).toBe(true)
    }
  })

  it('stops at the end of the data chunk, or reads to the end when its size is unknown', async () => {
    const trailing = riff([
      ['fmt ', fmt(22050)],
      ['data', samples],
      ['LIST', Buffer.alloc(30, 7)],
    ])
    expect((await collect((await wavSamples(pieces(trailing, 100))).samples)).equals(samples)).toBe(true)
    const streamed = riff([
      ['fmt ', fmt(22050)],
      ['data', samples],
    ])
    streamed.writeUInt32LE(0xffffffff, 12 + 8 + 16 + 4)
    expect((await collect((await wavSamples(pieces(streamed, 100))).samples)).equals(samples)).toBe(true)
  })

  it('refuses what is not a WAV', async () => {
    await expect(wavSamples(pieces(Buffer.from('ID3\x04 mp3 bytes here'), 4))).rejects.toThrow(/no RIFF\/WAVE header/)
    await expect(wavSamples(pieces(riff([['fmt ', fmt(8000)]]), 8))).rejects.toThrow(/ends inside its header/)
  })
})

describe('seconds of speech in a passing WAV', () => {
  const tally = (wav: Buffer, size: number): number => {
    let s = 0
    const seconds = new WavSeconds((n) => (s += n))
    for (let i = 0; i < wav.length; i += size) seconds.feed(wav.subarray(i, i + size))
    return s
  }

  it('counts the data chunk at its byte rate, whatever the chunking, and not what follows it', () => {
    // 1.5 s at 8 kHz, 16-bit mono, with a chunk before the data and one after it.
    const wav = riff([
      ['fmt ', fmt(8000)],
      ['LIST', Buffer.alloc(17, 1)],
      ['data', Buffer.alloc(24_000)],
      ['LIST', Buffer.alloc(4000, 2)],
    ])
    for (const size of [1, 7, 44, 4096, wav.length]) expect(tally(wav, size), String(size)).toBeCloseTo(1.5, 9)
  })

  it('counts to the end when the size is unknown, and nothing for what is not a WAV', () => {
    const streamed = riff([
      ['fmt ', fmt(16000)],
      ['data', Buffer.alloc(8000)],
    ])
    streamed.writeUInt32LE(0xffffffff, 12 + 8 + 16 + 4)
    expect(tally(streamed, 333)).toBeCloseTo(0.25, 9)
    expect(tally(Buffer.from('ID3\x04 mp3 bytes here and more of them'), 5)).toBe(0)
  })
})
