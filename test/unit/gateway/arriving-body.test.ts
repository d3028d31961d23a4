import { afterAll, describe, expect, it } from 'vitest'
import { ArrivingBody } from '../../../src-main/gateway/relay/arrivingBody'
import { BodyBudget, bodyBudgetLimits } from '../../../src-main/gateway/relay/bodyBudget'
import { INLINE_PARSE_BYTES, RelayBodyParser, sharedBody } from '../../../src-main/gateway/relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH } from '../../../src-main/gateway/relay/wire'

/**
 * Issue 42 #5: a 60 MB body must not hold the event loop. Measured: copying it into a fresh buffer
 * for the parser's worker (0.5–0.9 s) and faulting in that fresh buffer chunk by chunk (0.9–1.2 s,
 * up to 170 ms for one chunk). The body's buffer is now memory shared with the worker, which
 * writes it through first: the worker reads the bytes in place, and the bytes go upstream as sent.
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

  it('keeps every byte, in order, whether a chunk came before or after the worker wrote the buffer through', async () => {
    const { whole, chunks } = chunked(6 * MiB + 123)
    const body = new ArrivingBody(parser)
    const ahead = sharedBody(whole.length)
    body.allocatedAhead(ahead)
    // Some chunks at once (the worker has not answered yet), the rest after a few turns of the loop.
    for (const c of chunks.slice(0, 10)) body.add(c)
    await new Promise((r) => setTimeout(r, 50))
    for (const c of chunks.slice(10)) body.add(c)
    const got = await body.take()
    expect(got?.buffer).toBe(ahead.buffer)
    expect(got?.equals(whole)).toBe(true)
    expect((await parser.parse(got!)).model).toBe('m')
  })

  it('joins the chunks when the worker cannot write the buffer through', async () => {
    const { whole, chunks } = chunked(INLINE_PARSE_BYTES * 3)
    const gone = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: 60_000 })
    const body = new ArrivingBody(gone)
    body.allocatedAhead(sharedBody(whole.length))
    gone.close()
    for (const c of chunks) body.add(c)
    const got = await body.take()
    expect(got?.equals(whole)).toBe(true)
    // Still shared, so the parser reads it without another copy.
    expect(got?.buffer).toBeInstanceOf(SharedArrayBuffer)
  })

  it('a small body is its chunk, and a dropped body gives nothing', async () => {
    const small = new ArrivingBody(parser)
    const chunk = Buffer.from('{"model":"m"}')
    small.add(chunk)
    expect(await small.take()).toBe(chunk)
    const dropped = new ArrivingBody(parser)
    dropped.allocatedAhead(sharedBody(INLINE_PARSE_BYTES * 2))
    dropped.add(Buffer.alloc(1000, 32))
    dropped.drop()
    expect(await dropped.take()).toBeNull()
  })
})
