import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * The playground's chat reader against an llm that splits a UTF-8 character across two chunks
 * (as a real network does): the text arrives whole.
 */
describe('playground chat stream', () => {
  let llm: http.Server
  let daemon: TestDaemon

  beforeAll(async () => {
    const event = Buffer.from(`data: ${JSON.stringify({ choices: [{ delta: { content: 'Grüße 👋' } }] })}\n\n`)
    const cut = event.indexOf(Buffer.from('👋')) + 2
    llm = http.createServer((req, res) => {
      if (req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ data: [{ id: 'split-model' }] }))
        return
      }
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders()
      res.write(event.subarray(0, cut))
      setTimeout(() => {
        res.write(event.subarray(cut))
        res.end('data: [DONE]\n\n')
      }, 50)
    })
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r))
    daemon = await startDaemon({
      env: {
        NODE1_HOST: '127.0.0.1',
        NODE1_USER: 'sim',
        LLM_PORT: String((llm.address() as AddressInfo).port),
      },
    })
  })
  afterAll(async () => {
    await daemon?.stop()
    await new Promise<void>((r) => llm.close(() => r()))
  })

  it('keeps a multi-byte character split across chunks intact', async () => {
    const res = await daemon.admin('/api/gateway/playground/chat', {
      method: 'POST',
      body: JSON.stringify({ prompt: 'hi' }),
    })
    const events = (await readSse(res))
      .filter((e) => e.event === 'message')
      .map((e) => JSON.parse(e.data) as { type: string; text?: string; model?: string })
    const text = events
      .filter((e) => e.type === 'delta')
      .map((e) => e.text)
      .join('')
    expect(text).toBe('Grüße 👋')
    expect(events.at(-1)).toMatchObject({ type: 'done', model: 'split-model' })
  })
})
