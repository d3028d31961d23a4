import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { armBodyDeadline, releaseBodyDeadline } from '../../../src-main/http/bodyDeadline'

/** A request whose body is still arriving, with an answer already begun (so expiry cuts the socket). */
function slowRequest(headers: Record<string, string> = { 'content-length': '100' }): {
  req: IncomingMessage
  res: ServerResponse
  cut: () => boolean
} {
  let cut = false
  const socket = {
    destroyed: false,
    destroy: () => {
      cut = true
    },
  }
  const req = Object.assign(new EventEmitter(), { headers, complete: false, socket, url: '/scrub' })
  const res = { req, headersSent: true }
  return { req: req as unknown as IncomingMessage, res: res as unknown as ServerResponse, cut: () => cut }
}

/** The body deadline is one plain timer per request: armed, cleared when the body ends, fired at its time. */
describe('body deadline', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('refuses a body still arriving at its deadline, and not before', () => {
    const r = slowRequest()
    armBodyDeadline(r.req, r.res, 250)
    vi.advanceTimersByTime(249)
    expect(r.cut()).toBe(false)
    vi.advanceTimersByTime(1)
    expect(r.cut()).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('clears its timer when the body ends or the request goes', () => {
    const ended = slowRequest()
    const gone = slowRequest()
    armBodyDeadline(ended.req, ended.res, 250)
    armBodyDeadline(gone.req, gone.res, 250)
    expect(vi.getTimerCount()).toBe(2)
    ended.req.emit('end')
    gone.req.emit('close')
    expect(vi.getTimerCount()).toBe(0)
    vi.advanceTimersByTime(1000)
    expect(ended.cut() || gone.cut()).toBe(false)
  })

  it('keeps the earlier deadline when armed again, and arms anew once released', () => {
    const r = slowRequest()
    armBodyDeadline(r.req, r.res, 250)
    armBodyDeadline(r.req, r.res, 10_000)
    expect(vi.getTimerCount()).toBe(1)
    releaseBodyDeadline(r.req)
    expect(vi.getTimerCount()).toBe(0)
    armBodyDeadline(r.req, r.res, 500)
    vi.advanceTimersByTime(499)
    expect(r.cut()).toBe(false)
    vi.advanceTimersByTime(1)
    expect(r.cut()).toBe(true)
    // One listener each, however often it was armed.
    expect(r.req.listenerCount('end')).toBe(1)
  })

  it('arms nothing for a request without a body, or a deadline of 0', () => {
    const none = slowRequest({})
    armBodyDeadline(none.req, none.res, 250)
    const r = slowRequest()
    armBodyDeadline(r.req, r.res, 0)
    expect(vi.getTimerCount()).toBe(0)
  })
})
