import { describe, expect, it } from 'vitest'
import { safeHeaderList, safeHeaders } from '../../../src-main/gateway/wire'

// What of an upstream's answer head reaches the client: never a hop-by-hop header (RFC 9110 7.6.1),
// a cookie, or a header Node's server writes itself; the rest in the order sent.
const NEVER = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
  'server',
  'date',
]

/** A header list as parseResponseHead gives it: names sliced out of a longer text, so new strings. */
function listOf(names: readonly string[]): string[] {
  const text = names.map((n) => `${n}: v-${n}`).join('\r\n')
  const out: string[] = []
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':')
    out.push(line.slice(0, colon), line.slice(colon + 2))
  }
  return out
}

describe('headers passed from an upstream answer to the client', () => {
  it('drops every hop-by-hop header, cookies, server and date; keeps the rest in order after what is there', () => {
    const kept = ['content-type', 'content-length', 'x-request-id', 'cache-control', 'tea', 'dates', 'connections']
    const list = listOf([...NEVER.slice(0, 5), kept[0]!, ...NEVER.slice(5), ...kept.slice(1)])
    expect(safeHeaderList(list, [], ['X-Edge', '1'])).toEqual(['X-Edge', '1', ...kept.flatMap((n) => [n, `v-${n}`])])
  })

  it('drops the names the caller asks to drop too', () => {
    const list = listOf(['content-type', 'content-length', 'x-accel-buffering'])
    expect(safeHeaderList(list, ['content-length', 'x-accel-buffering'], [])).toEqual([
      'content-type',
      'v-content-type',
    ])
  })

  it('filters a record the same way', () => {
    const record = Object.fromEntries([...NEVER, 'content-type', 'x-id'].map((n) => [n, `v-${n}`]))
    expect(safeHeaders(record)).toEqual({ 'content-type': 'v-content-type', 'x-id': 'v-x-id' })
    expect(safeHeaders(record, ['x-id'])).toEqual({ 'content-type': 'v-content-type' })
  })
})
