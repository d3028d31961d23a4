import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { asksStreamUsage, UsageMeter } from '../../../src-main/gateway/relay/usageMeter'
import { readRelayRequest } from '../../../src-main/gateway/relay/wire'

/** Real llama-server streams (test/fixtures/llama-server/README.md). */
const FIXTURES = path.join(__dirname, '../../fixtures/llama-server')

const ev = (o: unknown): string => `data: ${JSON.stringify(o)}\n\n`
const delta = (t: string): string =>
  ev({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: t }, finish_reason: null }] })
const USAGE = ev({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 7, completion_tokens: 3 },
})
const DONE = 'data: [DONE]\n\n'

/** A meter whose clock the test moves: ms since the request arrived. */
function meter(): { m: UsageMeter; at: (ms: number) => void } {
  let now = 0
  return { m: new UsageMeter(0, () => now), at: (ms) => (now = ms) }
}

describe('include_usage', () => {
  it('is never added to the request: the meter notes only whether a stream’s client asked for usage', () => {
    const cases: [unknown, boolean][] = [
      [{ stream: true }, false],
      [{ stream: true, stream_options: { include_usage: false } }, false],
      [{ stream: true, stream_options: 'odd' }, false],
      [{ stream: true, stream_options: { include_usage: true } }, true],
    ]
    for (const [b, asked] of cases)
      expect(asksStreamUsage(readRelayRequest(Buffer.from(JSON.stringify(b))))).toBe(asked)
  })

  it('keeps the usage from a client that did not ask, when a forced engine sends it on every event', () => {
    const { m } = meter()
    m.readRequest(readRelayRequest(Buffer.from('{"stream":true}')))
    // vLLM with --enable-force-include-usage: the running counts on each event, then the usage event.
    const running = (t: string, n: number): string =>
      ev({
        id: 'c1',
        choices: [{ index: 0, delta: { content: t }, finish_reason: null }],
        usage: {
          prompt_tokens: 7,
          total_tokens: 7 + n,
          completion_tokens: n,
          prompt_tokens_details: { cached_tokens: 0 },
        },
      })
    const out = m.onSseChunk(Buffer.from(running('Hi', 1) + running(' there', 2) + USAGE + DONE)).toString()
    expect(out).toBe(
      delta('Hi').replace('"c1","object":"chat.completion.chunk"', '"c1"') +
        delta(' there').replace('"c1","object":"chat.completion.chunk"', '"c1"') +
        DONE,
    )
    expect(m.result()).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, tokens_estimated: false })
  })

  it('gives a client that did not ask the real llama-server stream without its usage event, and counts it', () => {
    const recorded = fs.readFileSync(path.join(FIXTURES, 'chat-stream-usage.body'))
    const { m } = meter()
    m.readRequest(readRelayRequest(Buffer.from('{"stream":true,"messages":[]}')))
    // Fed as a socket might deliver it: in pieces that cut events apart.
    const out: Buffer[] = []
    for (let at = 0; at < recorded.length; at += 97) out.push(m.onSseChunk(recorded.subarray(at, at + 97)))
    out.push(m.flushSse())
    const text = recorded.toString('utf8')
    const usageEvent = text.slice(text.indexOf('data: {"choices":[]'), text.indexOf('data: [DONE]'))
    expect(Buffer.concat(out).toString('utf8')).toBe(text.replace(usageEvent, ''))
    expect(m.result()).toMatchObject({ prompt_tokens: 31, completion_tokens: 6, tokens_estimated: false })
    // Without usage asked, the same server sends none: the client sees what it would have seen from it.
    const unasked = fs.readFileSync(path.join(FIXTURES, 'chat-stream-nousage.body'), 'utf8')
    expect(unasked).not.toContain('"usage"')
  })

  it('passes every event untouched to a client that asked', () => {
    const { m } = meter()
    m.readRequest(readRelayRequest(Buffer.from('{"stream":true,"stream_options":{"include_usage":true}}')))
    const wire = delta('Hi') + USAGE + DONE
    expect(m.onSseChunk(Buffer.from(wire)).toString()).toBe(wire)
    expect(m.result().completion_tokens).toBe(3)
  })
})

describe('UsageMeter on a stream', () => {
  it('strips the usage event it asked for, even when split across chunks, and passes the rest byte for byte', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const wire = delta('Hi') + delta(' there') + USAGE + DONE
    const cut = wire.indexOf('"usage"') + 3
    const out = Buffer.concat([
      m.onSseChunk(Buffer.from(wire.slice(0, cut))),
      m.onSseChunk(Buffer.from(wire.slice(cut))),
      m.flushSse(),
    ]).toString()
    expect(out).toBe(delta('Hi') + delta(' there') + DONE)
    expect(m.result()).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, tokens_estimated: false })
  })

  it('removes the `usage: null` an OpenAI-style upstream adds to every chunk once asked', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const withNull = `data: {"id":"c1","choices":[{"delta":{"content":"a"}}],"usage":null}\n\n`
    expect(m.onSseChunk(Buffer.from(withNull)).toString()).toBe(
      `data: {"id":"c1","choices":[{"delta":{"content":"a"}}]}\n\n`,
    )
  })

  it('cuts that `usage: null` from the bytes as they came, wherever it sits, and reads a usage nested before it', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const last = `data: {"id":"c1","choices":[{"delta":{"content":"é"}}],"usage":null}\n\n`
    const first = `data: {"usage":null,"id":"c2","choices":[{"delta":{"content":"b"}}]}\n\n`
    const middle = `data: {"id":"c3","usage":null,"choices":[{"delta":{"content":"c"}}]}\n\n`
    const nested = `data: {"choices":[{"delta":{"content":"d"},"usage":{"x":1}}],"usage":null}\n\n`
    const spaced = `data: {"id":"c5","choices":[{"delta":{"content":"e"}}], "usage": null}\n\n`
    const out = m.onSseChunk(Buffer.from(last + first + middle + nested + spaced + DONE, 'utf8')).toString('utf8')
    expect(out).toBe(
      `data: {"id":"c1","choices":[{"delta":{"content":"é"}}]}\n\n` +
        first + // not preceded by a comma: left as it came
        `data: {"id":"c3","choices":[{"delta":{"content":"c"}}]}\n\n` +
        `data: {"choices":[{"delta":{"content":"d"},"usage":{"x":1}}]}\n\n` +
        `data: {"id":"c5","choices":[{"delta":{"content":"e"}}]}\n\n` +
        DONE,
    )
    expect(m.result()).toMatchObject({ completion_tokens: 5, tokens_estimated: true })
  })

  it('cuts a last `usage: null` from a chunk that is not JSON as well (nothing there is counted either way)', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const broken = `data: {"id":"c1","choices":[{"delta":{"content":"a"}}],"usage":null}\n\n`.replace('"id"', 'id')
    expect(m.onSseChunk(Buffer.from(broken)).toString()).toBe(broken.replace(',"usage":null', ''))
  })

  it('leaves a usage event the client asked for', () => {
    const { m } = meter()
    const chunk = Buffer.from(delta('x') + USAGE + DONE)
    expect(m.onSseChunk(chunk)).toBe(chunk)
    expect(m.result().completion_tokens).toBe(3)
  })

  it('measures time to first token and tokens per second with the injected clock', () => {
    const { m, at } = meter()
    at(5)
    m.onSseChunk(Buffer.from(ev({ choices: [{ delta: { role: 'assistant', content: '' } }] })))
    at(120)
    m.onSseChunk(Buffer.from(delta('one')))
    at(320)
    m.onSseChunk(Buffer.from(delta(' two') + delta(' three')))
    at(330)
    m.onSseChunk(Buffer.from(USAGE + DONE))
    const r = m.result()
    expect(r.ttft_ms).toBe(120)
    // 3 tokens: the 2 after the first over the 0.2 s from first to last.
    expect(r.tokens_per_s).toBe(10)
    expect(r.generation_s).toBeCloseTo(0.2)
  })

  it('labels tokens counted from chunks as an estimate when the upstream sends no usage', () => {
    const { m, at } = meter()
    m.stripUnaskedUsage()
    at(10)
    m.onSseChunk(Buffer.from(delta('a')))
    at(20)
    m.onSseChunk(Buffer.from(delta('b') + delta('c') + DONE))
    const r = m.result()
    expect(r.completion_tokens).toBe(3)
    expect(r.tokens_estimated).toBe(true)
    expect(r.prompt_tokens).toBeNull()
  })

  it('counts reasoning and completion text, and passes an error event through', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const err = 'event: error\ndata: {"error":{"message":"boom"}}\n\n'
    const out = m.onSseChunk(
      Buffer.from(ev({ choices: [{ delta: { reasoning_content: 'hm' } }] }) + ev({ choices: [{ text: 'x' }] }) + err),
    )
    expect(out.toString()).toContain(err)
    expect(m.result().completion_tokens).toBe(2)
  })

  it('counts the same text fields on whole events as on events split across chunks', () => {
    // Text fields of every kind, empty ones (not text), and names that end like one (`object`, `context`, `subtext`).
    const wire =
      ev({ object: 'text_completion', choices: [{ text: 'a' }] }) +
      ev({ object: 'chat.completion.chunk', choices: [{ delta: { content: 'b', role: 'assistant' } }] }) +
      ev({ choices: [{ delta: { reasoning_content: 'c' } }] }) +
      ev({ choices: [{ delta: { content: '' } }], context: 'x', subtext: 'y', object: 'z' }) +
      ev({ choices: [{ text: '', delta: { reasoning_content: '' } }] }) +
      ev({ choices: [{ delta: { content: 'd', reasoning_content: 'e' } }] })
    const whole = meter().m
    expect(whole.onSseChunk(Buffer.from(wire)).toString()).toBe(wire)
    const split = meter().m
    const cut = wire.indexOf('reasoning_content') + 5
    split.onSseChunk(Buffer.from(wire.slice(0, cut)))
    split.onSseChunk(Buffer.from(wire.slice(cut)))
    expect(whole.result().completion_tokens).toBe(5)
    expect(split.result().completion_tokens).toBe(5)
  })

  it('holds back only the unfinished last event of a read, and forwards every byte once', () => {
    const { m } = meter()
    m.stripUnaskedUsage()
    const wire = delta('a') + delta('b') + delta('c') + DONE
    const cuts = [wire.indexOf('"b"'), wire.indexOf('"c"') + 1, wire.length - 3]
    const parts: Buffer[] = []
    let from = 0
    for (const at of [...cuts, wire.length]) {
      parts.push(m.onSseChunk(Buffer.from(wire.slice(from, at))))
      from = at
    }
    expect(parts[0]!.toString()).toBe(delta('a'))
    expect(Buffer.concat([...parts, m.flushSse()]).toString()).toBe(wire)
    expect(m.result().completion_tokens).toBe(3)
  })
})

describe('UsageMeter on a stream read in any pieces', () => {
  /** Streams as engines send them: multi-byte text, OpenAI's `usage: null` on every chunk, CRLF events, an error event. */
  const withNull = (t: string) =>
    `data: {"id":"c1","choices":[{"delta":{"content":${JSON.stringify(t)}}}],"usage":null}\n\n`
  const streams: { name: string; wire: string; strip: boolean; expected: string; tokens: number }[] = [
    {
      name: 'usage asked for by Tandem',
      wire: delta('Grüße') + delta(' 日本') + delta('') + USAGE + DONE,
      strip: true,
      expected: delta('Grüße') + delta(' 日本') + delta('') + DONE,
      tokens: 3,
    },
    {
      name: 'usage asked for by the client',
      wire: delta('Grüße') + delta(' 日本') + USAGE + DONE,
      strip: false,
      expected: delta('Grüße') + delta(' 日本') + USAGE + DONE,
      tokens: 3,
    },
    {
      name: 'usage: null on every chunk',
      wire: withNull('é') + withNull('b') + USAGE + DONE,
      strip: true,
      expected: withNull('é').replace(',"usage":null', '') + withNull('b').replace(',"usage":null', '') + DONE,
      tokens: 3,
    },
    {
      name: 'CRLF events and an error event',
      wire: delta('a').replace('\n\n', '\r\n\r\n') + 'event: error\ndata: {"error":{"message":"ü"}}\n\n' + DONE,
      strip: true,
      expected: delta('a').replace('\n\n', '\r\n\r\n') + 'event: error\ndata: {"error":{"message":"ü"}}\n\n' + DONE,
      tokens: 1,
    },
  ]

  it.each(streams)(
    '$name: the same bytes out and the same counts, however the reads are cut',
    ({ wire, strip, expected, tokens }) => {
      const bytes = Buffer.from(wire)
      let seed = 11
      const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
      for (let round = 0; round < 400; round++) {
        const cuts = [...new Set(Array.from({ length: 1 + next(4) }, () => 1 + next(bytes.length - 1)))].sort(
          (a, b) => a - b,
        )
        const { m } = meter()
        if (strip) m.stripUnaskedUsage()
        const out: Buffer[] = []
        let from = 0
        for (const at of [...cuts, bytes.length]) {
          out.push(m.onSseChunk(bytes.subarray(from, at)))
          from = at
        }
        out.push(m.flushSse())
        expect(Buffer.concat(out).toString(), `cut at ${cuts.join(', ')}`).toBe(expected)
        const r = m.result()
        expect(r.completion_tokens, `cut at ${cuts.join(', ')}`).toBe(tokens)
      }
    },
  )
})

describe('UsageMeter on a plain answer', () => {
  const answer = (content: string, extra: Record<string, unknown> = {}): string =>
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      ...extra,
      usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 },
    })
  const read = (text: string, cuts: number[] = [], transcript = false): ReturnType<UsageMeter['result']> => {
    const { m } = meter()
    let from = 0
    for (const at of [...cuts, text.length]) {
      m.onBodyChunk(Buffer.from(text.slice(from, at)))
      from = at
    }
    if (transcript) m.endTranscript()
    else m.endBody()
    return m.result()
  }

  it('takes the answer’s usage, also when the answer arrives in pieces', () => {
    const text = answer('hello')
    for (const cuts of [[], [5], [text.indexOf('usage') + 2], [text.indexOf('"prompt_tokens"') + 3, text.length - 2]]) {
      const r = read(text, cuts)
      expect([r.prompt_tokens, r.completion_tokens, r.tokens_estimated]).toEqual([11, 4, false])
    }
  })

  it('is not fooled by generated text that spells out a usage member', () => {
    for (const content of [
      '"usage":{"prompt_tokens":999,"completion_tokens":999}',
      '\\"usage\\":{"prompt_tokens":999}',
      '\\\\"usage": {"completion_tokens": 999}',
      'the word "usage"',
    ]) {
      const r = read(answer(content))
      expect([r.prompt_tokens, r.completion_tokens]).toEqual([11, 4])
    }
    // Text after the real usage member (an engine that orders members differently).
    const late = JSON.stringify({
      usage: { prompt_tokens: 2, completion_tokens: 1 },
      choices: [{ message: { content: '"usage":{"prompt_tokens":999,"completion_tokens":999}' } }],
    })
    expect(read(late).prompt_tokens).toBe(2)
  })

  it('counts nothing from an answer that is not JSON, or whose usage is not an object', () => {
    for (const text of [
      'plain text with "usage":{"prompt_tokens":5}',
      '{"usage":{"prompt_tokens":5,',
      '{"usage":null}',
      '{"usage":"many"}',
      '',
    ]) {
      const r = read(text)
      expect([r.prompt_tokens, r.completion_tokens]).toEqual([null, null])
    }
  })

  it('takes only counts: a negative, fractional or unsafe number of tokens is not counted', () => {
    for (const bad of [-3, 2.5, 2 ** 60, '7']) {
      const plain = read(JSON.stringify({ usage: { prompt_tokens: bad, completion_tokens: bad } }))
      expect([plain.prompt_tokens, plain.completion_tokens], String(bad)).toEqual([null, null])
      const { m } = meter()
      m.onSseChunk(Buffer.from(ev({ choices: [], usage: { prompt_tokens: bad, completion_tokens: bad } }) + DONE))
      expect([m.result().prompt_tokens, m.result().completion_tokens], String(bad)).toEqual([null, null])
    }
    // Spaces and a member the meter does not read, around the counts it does.
    const spaced = read('{"usage" : { "prompt_tokens" : 0 , "completion_tokens" : 12 , "total_tokens" : 12 } }')
    expect([spaced.prompt_tokens, spaced.completion_tokens]).toEqual([0, 12])
  })

  it('reads the usage object’s counts only when the object holds together from its end', () => {
    for (const text of [
      '{"usage":{"prompt_tokens":5 "completion_tokens":2}}',
      '{"usage":{"prompt_tokens":5,,"completion_tokens":2}}',
      '{"usage":{"completion_tokens":2:3}}',
      '{"usage":{prompt_tokens:5}}',
    ]) {
      const r = read(text)
      expect([r.prompt_tokens, r.completion_tokens], text).toEqual([null, null])
    }
  })

  it('reads only the top-level usage, and the last of duplicate members as JSON.parse does', () => {
    const nested = read('{"choices":[{"usage":{"prompt_tokens":999}}],"meta":{"usage":{"completion_tokens":999}}}')
    expect([nested.prompt_tokens, nested.completion_tokens]).toEqual([null, null])
    const twice = read(
      '{"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":7,"prompt_tokens":8,"completion_tokens":2.5e1}}',
    )
    expect([twice.prompt_tokens, twice.completion_tokens]).toEqual([8, 25])
  })

  it('counts a transcription’s duration, with or without a usage member of its own', () => {
    const plain = read(JSON.stringify({ text: 'hi', duration: 2.5, segments: [{ start: 0, end: 2.5 }] }), [], true)
    expect(plain.audio_seconds).toBe(2.5)
    const withUsage = read(
      JSON.stringify({ text: 'hi', duration: 3, usage: { type: 'duration', seconds: 3 } }),
      [],
      true,
    )
    expect(withUsage.audio_seconds).toBe(3)
    // OpenAI's newer answers: no duration, usage in seconds.
    expect(read(JSON.stringify({ text: 'hi', usage: { type: 'duration', seconds: 7 } }), [], true).audio_seconds).toBe(
      7,
    )
    // A chat answer is read for its usage only: a duration there is not audio.
    expect(read(JSON.stringify({ duration: 4, usage: { prompt_tokens: 1 } })).audio_seconds).toBe(0)
  })

  it('counts the upload’s own length when a transcription answer says none (json, text)', () => {
    const { m } = meter()
    m.uploadAudioSeconds(12.5)
    m.onBodyChunk(Buffer.from(JSON.stringify({ text: 'hello' })))
    m.endTranscript()
    expect(m.result().audio_seconds).toBe(12.5)
    const told = meter().m
    told.uploadAudioSeconds(12.5)
    told.onBodyChunk(Buffer.from(JSON.stringify({ text: 'hello', duration: 12.4 })))
    told.endTranscript()
    expect(told.result().audio_seconds).toBe(12.4)
    const text = meter().m
    text.uploadAudioSeconds(3)
    text.onBodyChunk(Buffer.from('hello there'))
    text.endTranscript()
    expect(text.result().audio_seconds).toBe(3)
  })
})
