import { afterAll, describe, expect, it } from 'vitest'
import { ArrivingBody } from '../../../src-main/gateway/relay/arrivingBody'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { INLINE_PARSE_BYTES, RelayBodyParser, sharedBody } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/**
 * Issue 42 #5: a 60 MB body must not hold the event loop. Measured: copying it into a fresh buffer
 * for the parser's worker (0.5–0.9 s), faulting in that fresh buffer chunk by chunk (0.9–1.2 s,
 * up to 170 ms for one chunk), the chunks that waited for a worker copied in at once, and the
 * full collections V8 ran for 60 MB of chunks not yet collected. The body's buffer is memory
 * shared with the worker, each chunk is copied in as it comes while a toucher thread faults the
 * pages in, and the chunk's own memory is freed at once; the bytes go upstream as sent.
 */

const MiB = 2 ** 20
const parser = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 })
afterAll(() => parser.close())

/** A JSON body of `size` bytes whose every byte differs from its neighbours', cut into 64 KiB chunks. */
function chunked(size: number): { whole: Buffer; chunks: Buffer[] } {
  const head = Buffer.from('{"model":"m","pad":"')
  const whole = Buffer.alloc(size)
  for (let i = 0; i < size; i++) whole[i] = 97 + (i % 26)
  head.copy(whole, 0)
  Buffer.from('"}').copy(whole, size - 2)
  const chunks: Buffer[] = []
  for (let at = 0; at < size; at += 64 * 1024) chunks.push(Buffer.from(whole.subarray(at, at + 64 * 1024)))
  return { whole, chunks }
}

describe('a large body arrives into memory shared with the parser’s worker (issue 42)', () => {
  it('a declared buffer ahead is shared memory, so the worker reads it without a copy', () => {
    const r = new BodyBudget(bodyBudgetLimits(256 * MiB)).open(['address a'])
    const ahead = r.bufferAhead(8 * MiB)
    expect(ahead?.buffer).toBeInstanceOf(SharedArrayBuffer)
    r.release()
  })

  it('keeps every byte, in order, copied as each chunk comes while the toucher faults the fresh buffer in', async () => {
    const { whole, chunks } = chunked(6 * MiB + 123)
    const body = new ArrivingBody(parser)
    const ahead = sharedBody(whole.length)
    body.allocatedAhead(ahead)
    // Some chunks at once (the toucher is still at work), the rest after a few turns of the loop.
    for (const c of chunks.slice(0, 10)) body.add(c)
    await new Promise((r) => setTimeout(r, 50))
    for (const c of chunks.slice(10)) body.add(c)
    const got = await body.take()
    expect(got?.buffer).toBe(ahead.buffer)
    expect(got?.equals(whole)).toBe(true)
    expect((await parser.parse(got!)).model).toBe('m')
  })

  it('copies a chunk into the fresh buffer at once, without waiting for any worker, and frees its memory', async () => {
    const { whole, chunks } = chunked(INLINE_PARSE_BYTES * 3)
    const body = new ArrivingBody(parser)
    const ahead = sharedBody(whole.length)
    body.allocatedAhead(ahead)
    body.add(chunks[0]!)
    // In the body's buffer within the same turn: no chunk waits in a list for a worker's answer.
    expect(ahead.subarray(0, chunks[0]!.length).equals(whole.subarray(0, chunks[0]!.length))).toBe(true)
    // The chunk's own 64 KiB are given back (detached) as soon as they are copied, not at V8's next collection.
    expect(chunks[0]!.buffer.byteLength).toBe(0)
    for (const c of chunks.slice(1)) body.add(c)
    expect((await body.take())?.equals(whole)).toBe(true)
  })

  it('leaves a chunk that is only part of a larger buffer as it is', async () => {
    const outer = Buffer.alloc(2 * INLINE_PARSE_BYTES, 120)
    const part = outer.subarray(0, INLINE_PARSE_BYTES + 10)
    const body = new ArrivingBody(parser)
    body.allocatedAhead(sharedBody(part.length), true)
    body.add(part)
    expect(outer.length).toBe(2 * INLINE_PARSE_BYTES)
    expect(outer[outer.length - 1]).toBe(120)
    expect((await body.take())?.equals(part)).toBe(true)
  })

  it('joins the chunks, into shared memory, when no buffer was allocated ahead', async () => {
    const { whole, chunks } = chunked(INLINE_PARSE_BYTES * 3)
    const body = new ArrivingBody(parser)
    for (const c of chunks) body.add(c)
    const got = await body.take()
    expect(got?.equals(whole)).toBe(true)
    // Still shared, so the parser reads it without another copy.
    expect(got?.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect((await parser.parse(got!)).model).toBe('m')
  })

  it('a small body is its chunk, and a dropped body gives nothing', async () => {
    const small = new ArrivingBody(parser)
    const chunk = Buffer.from('{"model":"m"}')
    small.add(chunk)
    expect(await small.take()).toBe(chunk)
    // A small body keeps its chunk: nothing is detached.
    expect(chunk.length).toBe(13)
    const dropped = new ArrivingBody(parser)
    dropped.allocatedAhead(sharedBody(INLINE_PARSE_BYTES * 2))
    dropped.add(Buffer.alloc(1000, 32))
    dropped.drop()
    expect(await dropped.take()).toBeNull()
  })
})
