import { describe, expect, it } from 'vitest'
import { safeHeaders } from '../../../src-main/gateway/relay/wire'

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

describe('headers passed from an upstream answer to the client', () => {
  it('drops every hop-by-hop header, cookies, server and date; keeps the rest', () => {
    const kept = ['content-type', 'content-length', 'x-request-id', 'cache-control', 'tea', 'dates', 'connections']
    const record = Object.fromEntries([...NEVER, ...kept].map((n) => [n, `v-${n}`]))
    expect(safeHeaders(record)).toEqual(Object.fromEntries(kept.map((n) => [n, `v-${n}`])))
  })

  it('drops the names the caller asks to drop too', () => {
    const record = Object.fromEntries([...NEVER, 'content-type', 'x-id'].map((n) => [n, `v-${n}`]))
    expect(safeHeaders(record)).toEqual({ 'content-type': 'v-content-type', 'x-id': 'v-x-id' })
    expect(safeHeaders(record, ['x-id'])).toEqual({ 'content-type': 'v-content-type' })
  })
})
