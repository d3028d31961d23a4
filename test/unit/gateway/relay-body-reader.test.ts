import { describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { RelayBodyReader } from '../../../src-main/gateway/relay/bodyReader'
import { GATEWAY_JSON_DEPTH, parseJsonObject } from '../../../src-main/gateway/relay/wire'

/**
 * Issue 42 #5: the relay reads `model`, `stream` and `stream_options` in one pass as the body
 * arrives instead of a depth scan and JSON.parse over the whole body. What it accepts and what it
 * reads must be exactly what JSON.parse gives: checked on thousands of generated bodies, valid and
 * broken, each fed in random chunks.
 */

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Rand = () => number
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!

const KEYS = ['model', 'stream', 'stream_options', '\\u006dodel', 'str\\u0065am', 'messages', 'modelx', 'mode', '', 'é']
const STRINGS = ['"m"', '"sim/first"', '"a\\"b"', '"\\ud800"', '"\\u00e9t\\u00e9"', '"tab\\there"', '"ünï"', '""']
const NUMBERS = ['0', '-0', '1', '-12.5e+3', '1E9', '0.001', '123456789012345678901234567890']

function value(r: Rand, depth: number): string {
  const k = r()
  if (depth > 3 || k < 0.35) return pick(r, [...STRINGS, ...NUMBERS, 'true', 'false', 'null'])
  if (k < 0.65) {
    const n = Math.floor(r() * 4)
    return `[${Array.from({ length: n }, () => value(r, depth + 1)).join(pick(r, [',', ' , ', ',\n']))}]`
  }
  return object(r, depth + 1)
}

function object(r: Rand, depth: number): string {
  const n = Math.floor(r() * 5)
  const members = Array.from(
    { length: n },
    () =>
      `${pick(r, ['', ' ', '\n\t'])}"${pick(r, KEYS)}"${pick(r, ['', ' '])}:${pick(r, ['', ' '])}${value(r, depth)}`,
  )
  return `{${members.join(',')}${pick(r, ['', ' ', '\r\n'])}}`
}

/** A body, sometimes broken: a byte replaced, dropped or added, or the end cut off. */
function body(r: Rand): Buffer {
  let text = r() < 0.9 ? object(r, 0) : value(r, 0)
  if (r() < 0.3) text = pick(r, ['', ' ', '\t']) + text + pick(r, ['', ' ', '\n'])
  const buf = Buffer.from(text)
  const k = r()
  if (k > 0.5 || buf.length === 0) return buf
  const at = Math.floor(r() * buf.length)
  const junk = Buffer.from([
    pick(r, [0x22, 0x2c, 0x7d, 0x5d, 0x3a, 0x5c, 0x30, 0x2d, 0x2e, 0x65, 0x01, 0x7b, 0xff, 0x20]),
  ])
  if (k < 0.2) return Buffer.concat([buf.subarray(0, at), junk, buf.subarray(at + 1)])
  if (k < 0.35) return Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1)])
  if (k < 0.45) return Buffer.concat([buf.subarray(0, at), junk, buf.subarray(at)])
  return buf.subarray(0, at)
}

type Outcome =
  { ok: true; model: string | null; stream: boolean; streamOptions: unknown } | { ok: false; status: number }

/** What the relay read before: the depth check and JSON.parse over the whole body. */
function reference(raw: Buffer): Outcome {
  try {
    const b = parseJsonObject(raw)
    return {
      ok: true,
      model: typeof b.model === 'string' ? b.model : null,
      stream: b.stream === true,
      streamOptions: b.stream_options,
    }
  } catch (err) {
    return { ok: false, status: (err as ApiError).status }
  }
}

/** What the reader gives, fed in random chunks. */
function read(raw: Buffer, r: Rand): Outcome {
  const reader = new RelayBodyReader(GATEWAY_JSON_DEPTH)
  try {
    for (let at = 0; at < raw.length;) {
      const n = 1 + Math.floor(r() * 12)
      reader.feed(raw.subarray(at, at + n))
      at += n
    }
    const got = reader.end(raw)
    return { ok: true, model: got.model, stream: got.stream, streamOptions: got.streamOptions }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    return { ok: false, status: err.status }
  }
}

describe('the relay body reader agrees with JSON.parse', () => {
  it('on 20,000 generated bodies, valid and broken, fed in random chunks', () => {
    const r = rng(42)
    let accepted = 0
    let refused = 0
    for (let i = 0; i < 20_000; i++) {
      const raw = body(r)
      const want = reference(raw)
      expect(read(raw, r), `body ${i}: ${raw.toString('latin1')}`).toEqual(want)
      if (want.ok) accepted++
      else refused++
    }
    // Both kinds were really tried.
    expect(accepted).toBeGreaterThan(5000)
    expect(refused).toBeGreaterThan(2000)
  })

  it('on the edges of the grammar', () => {
    const cases = [
      '{}',
      ' {} ',
      '{"model":"a","model":"b"}',
      '{"model":1,"model":"b"}',
      '{"model":"b","model":null}',
      '{"stream":true,"stream":false}',
      '{"stream":false,"stream":true}',
      '{"stream":"true"}',
      '{"stream_options":{"include_usage":true},"stream":true}',
      '{"stream_options":null}',
      '{"a":{"model":"inner"}}',
      '[{"model":"x"}]',
      '"x"',
      '1',
      'null',
      '',
      ' ',
      '{',
      '{"a"}',
      '{"a":}',
      '{"a":1,}',
      '[1,]',
      '{"a":01}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":-}',
      '{"a":1e}',
      '{"a":1e+}',
      '{"a":tru}',
      '{"a":"\\x"}',
      '{"a":"\\u12"}',
      '{"a":"\u0001"}',
      '\ufeff{}',
      '{"model":"a"}x',
      '{"model":"a"} {}',
      '{"\\u006d\\u006f\\u0064\\u0065\\u006c":"escaped"}',
      '{"model":"\\ud83d\\ude00"}',
      '{"a":[]}',
      '{"a":[[]]}',
      '{"a":1}}',
      '{"a":1]',
      '[}',
      '{"a" : 1 , "model" : "m" }',
      '{"a":-0.0e-0}',
      '{"model":"a",\n"stream":true}',
    ]
    const r = rng(7)
    for (const c of cases) expect(read(Buffer.from(c), r), c).toEqual(reference(Buffer.from(c)))
  })

  it('refuses nesting deeper than the gateway allows, and takes it at the limit', () => {
    const r = rng(9)
    for (const depth of [GATEWAY_JSON_DEPTH - 1, GATEWAY_JSON_DEPTH, GATEWAY_JSON_DEPTH + 1, 10_000]) {
      const raw = Buffer.from(`{"model":"m","x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`)
      expect(read(raw, r), `depth ${depth}`).toEqual(reference(raw))
    }
    const deep = new RelayBodyReader(GATEWAY_JSON_DEPTH)
    expect(() => deep.feed(Buffer.from('['.repeat(300)))).toThrow(/nests deeper than 256/)
  })

  it('reads a 60 MB body chunk by chunk, members after the big one included', () => {
    const content = 'x'.repeat(60 * 1024 * 1024)
    const raw = Buffer.from(`{"messages":[{"role":"user","content":"${content}"}],"model":"big","stream":true}`)
    const reader = new RelayBodyReader(GATEWAY_JSON_DEPTH)
    for (let at = 0; at < raw.length; at += 64 * 1024) reader.feed(raw.subarray(at, at + 64 * 1024))
    const got = reader.end(raw)
    expect(got.model).toBe('big')
    expect(got.stream).toBe(true)
  })
})
