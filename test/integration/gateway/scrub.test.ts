import diagnostics from 'node:diagnostics_channel'
import type http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * Issue 8: one unauthenticated `POST /scrub` with 1 MB of short e-mail addresses froze the daemon
 * for 24 s. Through the real daemon: 1 MB is scrubbed and rehydrated, a 4 MB body is refused with
 * 413, and `/api/health` is answered while a 1 MB scrub is still being worked on (proved by the
 * order in which the answers arrive, not by timing).
 */

/** Distinct short addresses, `chars` long at most; and how many there are. */
function emails(chars: number, separator = ' '): { text: string; count: number } {
  const out: string[] = []
  let n = 0
  for (let i = 0; ; i++) {
    const e = `u${i.toString(36)}@x.io`
    if (n + e.length > chars) break
    out.push(e)
    n += e.length + 1
  }
  return { text: out.join(separator), count: out.length }
}

interface ScrubAnswer {
  text: string
  session_id: string
  entities: { type: string; placeholder: string }[]
}

describe('scrub through the daemon', () => {
  let d: TestDaemon
  const post = (path: string, body: string): Promise<Response> =>
    fetch(d.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body })

  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(async () => {
    await d?.stop()
  })

  it('scrubs 1 MB of short addresses and rehydrates the result', async () => {
    // One address a line: as JSON each newline takes two bytes, so the body is over 1 MiB.
    const { text, count } = emails(1_000_000, '\n')
    expect(Buffer.byteLength(JSON.stringify({ text }))).toBeGreaterThan(1024 * 1024)
    const res = await post('/scrub', JSON.stringify({ text }))
    expect(res.status).toBe(200)
    const s = (await res.json()) as ScrubAnswer
    expect(s.entities).toHaveLength(count)
    expect(s.entities[count - 1]).toMatchObject({ type: 'EMAIL', placeholder: `[EMAIL_${count}]` })
    const back = await post('/rehydrate', JSON.stringify({ text: s.text, session_id: s.session_id }))
    expect(back.status).toBe(200)
    expect(((await back.json()) as { text: string; replaced: number }).text).toBe(text)
  })

  it('refuses a 4 MB body with 413 in the control shape', async () => {
    for (const path of ['/scrub', '/rehydrate']) {
      const res = await post(path, JSON.stringify({ text: 'a'.repeat(4_000_000), session_id: 'x' }))
      expect(res.status, path).toBe(413)
      expect(await res.json(), path).toMatchObject({ code: 'payload_too_large' })
    }
  })

  it('answers /api/health before a 1 MB scrub that was already running', async () => {
    const { text, count } = emails(1_000_000)
    const order: string[] = []
    let health: Promise<void> | undefined
    // The moment the daemon has the whole scrub body, the scrub is next in line: ask for health then.
    const onRequest = (message: unknown): void => {
      const { request } = message as { request: http.IncomingMessage }
      if (request.url !== '/scrub') return
      request.once('end', () => {
        health = fetch(d.url + '/api/health').then((r) => {
          order.push(`health ${r.status}`)
          return r.body?.cancel()
        })
      })
    }
    diagnostics.subscribe('http.server.request.start', onRequest)
    try {
      const res = await post('/scrub', JSON.stringify({ text }))
      order.push(`scrub ${res.status}`)
      const s = (await res.json()) as ScrubAnswer
      await health
      expect(order).toEqual(['health 200', 'scrub 200'])
      expect(s.entities).toHaveLength(count)
    } finally {
      diagnostics.unsubscribe('http.server.request.start', onRequest)
    }
  })
})
