import { afterAll, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { INLINE_PARSE_BYTES, RelayBodyParser, sharedBody } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH, readRelayRequest, type RelayRequest } from '../../../src-main/gateway/relay/wire'

/**
 * Issue 42 #5: a large relayed body is read by JSON.parse in a worker thread, not on the main
 * thread. What the worker reads and refuses must be exactly what the inline reading gives.
 */

const parser = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 })
afterAll(() => parser.close())

type Outcome = { ok: true; request: Omit<RelayRequest, never> } | { ok: false; status: number; message: string }

async function outcome(read: () => RelayRequest | Promise<RelayRequest>): Promise<Outcome> {
  try {
    const r = await read()
    return { ok: true, request: { model: r.model, stream: r.stream, streamOptions: r.streamOptions } }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    return { ok: false, status: err.status, message: err.message }
  }
}

/** `text` padded past the inline size with whitespace inside a member, so the worker reads it. */
function large(text: string): Buffer {
  const pad = ' '.repeat(INLINE_PARSE_BYTES + 1024)
  return Buffer.from(text.startsWith('{') ? `{"pad":"${pad}",${text.slice(1)}` : `${pad}${text}`)
}

const BODIES = [
  '{"model":"sim/first","stream":true,"stream_options":{"include_usage":true},"messages":[]}',
  '{"model":"a","model":"b","stream":false}',
  '{"model":["sim-embed"],"input":"x"}',
  '{"stream":"true"}',
  '{"model":"\\u00e9t\\u00e9","temperature":0.70,"max_tokens":2e3}',
  '{"model":"m",}',
  '{"model":"m"',
  '[1,2,3]',
  '"just a string"',
  'null',
  `{"deep":${'['.repeat(GATEWAY_JSON_DEPTH + 1)}${']'.repeat(GATEWAY_JSON_DEPTH + 1)}}`,
  '{"model":"m"} trailing',
]

describe('a large relayed body is read in a worker, as the main thread reads a small one', () => {
  it.each(BODIES)('%s', async (text) => {
    const raw = large(text)
    expect(raw.length).toBeGreaterThan(INLINE_PARSE_BYTES)
    const inline = await outcome(() => readRelayRequest(raw))
    expect(await outcome(() => parser.parse(raw))).toEqual(inline)
  })

  it('a small body is read inline with the same answers', async () => {
    for (const text of BODIES) {
      const raw = Buffer.from(text)
      expect(await outcome(() => parser.parse(raw))).toEqual(await outcome(() => readRelayRequest(raw)))
    }
  })

  it('leaves the event loop free while a 40 MB body is parsed, and the caller’s bytes untouched', async () => {
    const messages = Array.from({ length: 200_000 }, (_, i) => ({
      role: 'user',
      content: `message ${i} ${'x'.repeat(150)}`,
    }))
    const raw = Buffer.from(JSON.stringify({ model: 'big', stream: true, messages }))
    const copy = Buffer.from(raw)
    expect(raw.length).toBeGreaterThan(35 * 1024 * 1024)
    let turns = 0
    let done = false
    const spin = (): void => {
      if (done) return
      turns++
      setImmediate(spin)
    }
    setImmediate(spin)
    const got = await parser.parse(raw)
    done = true
    expect(got).toMatchObject({ model: 'big', stream: true })
    // Inline, JSON.parse of 40 MB would run in one turn: here the loop kept turning meanwhile.
    expect(turns).toBeGreaterThan(10)
    expect(raw.equals(copy)).toBe(true)
  })

  it('the toucher faults a fresh buffer in without changing a byte written before or meanwhile', async () => {
    const body = sharedBody(8 * 1024 * 1024 + 3)
    for (let i = 0; i < body.length; i += 4093) body[i] = 1 + (i % 250)
    const touched = parser.touch(body)
    // Written while the toucher runs over the same pages.
    for (let i = 1; i < body.length; i += 4093) body[i] = 2 + (i % 250)
    await touched
    let wrong = 0
    for (let i = 0; i < body.length; i += 4093) if (body[i] !== 1 + (i % 250)) wrong++
    for (let i = 1; i < body.length; i += 4093) if (body[i] !== 2 + (i % 250)) wrong++
    expect(wrong).toBe(0)
  })

  it('parses bodies in flight together, each to its own answer', async () => {
    const raws = ['a', 'b', 'c', 'd'].map((m) => large(`{"model":"${m}"}`))
    const got = await Promise.all(raws.map((r) => parser.parse(r)))
    expect(got.map((g) => g.model)).toEqual(['a', 'b', 'c', 'd'])
  })

  it('refuses what is in flight with a 503 when a parse overruns its time; another parser is unaffected', async () => {
    const slow = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 1 })
    const raw = Buffer.from(JSON.stringify({ model: 'm', pad: 'x'.repeat(30 * 1024 * 1024) }))
    await expect(slow.parse(raw)).rejects.toMatchObject({ status: 503 })
    slow.close()
    expect((await parser.parse(large('{"model":"after"}'))).model).toBe('after')
  })
})
