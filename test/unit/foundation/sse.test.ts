import http from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { writeSse } from '../../../src-main/http/sse'

let server: http.Server | null = null
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()))
})

/** Serves one SSE stream of `items` with the given heartbeat; returns the URL. */
async function serve(items: (signal: AbortSignal) => AsyncIterable<unknown>, heartbeatMs: number): Promise<string> {
  const app = express()
  app.get('/s', (_req, res) => {
    const abort = new AbortController()
    res.on('close', () => abort.abort())
    void writeSse(res, items(abort.signal), abort.signal, () => new ApiError('internal', 'x'), { heartbeatMs })
  })
  server = app.listen(0, '127.0.0.1')
  await new Promise<void>((r) => server!.once('listening', () => r()))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/s`
}

describe('SSE writer', () => {
  it('sends heartbeat comments while a stream is idle, and an id per item with a seq', async () => {
    let heard!: () => void
    const heartbeat = new Promise<void>((r) => (heard = r))
    const url = await serve(async function* () {
      yield { seq: 7, name: 'x' }
      await heartbeat // idle until the client has seen a heartbeat
      yield { seq: 8, name: 'y' }
    }, 5)
    const res = await fetch(url)
    let text = ''
    const decoder = new TextDecoder()
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true })
      if (text.includes(': hb\n\n')) heard()
    }
    expect(text.startsWith('id: 7\ndata: {"seq":7,"name":"x"}\n\n')).toBe(true)
    expect(text).toMatch(/\n\n: hb\n\n(: hb\n\n)*id: 8\ndata: /)
    expect(text.endsWith('event: end\ndata: {}\n\n')).toBe(true)
  })
})
