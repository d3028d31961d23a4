import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { JobRegistry } from '../../../src-main/platform/jobs'
import { EventBus } from '../../../src-main/platform/eventBus'
import { Limits } from '../../../src-main/platform/limits'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import { createGatewayModule, type GatewayModule } from '../../../src-main/gateway/module'
import { requestState } from '../../../src-main/http/requestState'
import { waitFor } from './setup'

/**
 * Issue 33 #1: chat, completions and embeddings bodies were held in memory with nothing bounding
 * their sum. With a 2 MiB body budget (1 MiB per address; a body costs twice its size), bodies
 * beyond it are refused with 503,
 * Retry-After and OpenAI's error shape, and what an aborted request held is given back.
 */
const KiB = 1024
const MiB = 1024 * KiB

/** A chat body of exactly `size` bytes. */
function chatBody(size: number): Buffer {
  const head = '{"model":"m","messages":[{"role":"user","content":"'
  const tail = '"}]}'
  return Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail)
}

interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** POSTs `body` (with Content-Length, or chunked when `chunked`) on a connection of its own. */
function post(url: string, body: Buffer, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/v1/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': body.length }) },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
      },
    )
    req.on('error', reject)
    if (!chunked) return void req.end(body)
    // Chunked: the body in 64 KiB pieces, so the budget is charged as they arrive.
    for (let at = 0; at < body.length; at += 64 * KiB) req.write(body.subarray(at, at + 64 * KiB))
    req.end()
  })
}

/** Sends a request head declaring `size` bytes and `sendBytes` of the body, on a raw socket. */
async function partialPost(port: number, size: number, sendBytes: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise<void>((r) => socket.once('connect', () => r()))
  socket.on('error', () => undefined)
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
  )
  socket.write(chatBody(size).subarray(0, sendBytes))
  return socket
}

describe('the relayed body budget', () => {
  /** An llm that holds every answer until `answerAll`: the bodies stay charged meanwhile. */
  const held: http.ServerResponse[] = []
  let bodiesSeen = 0
  const llm = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      bodiesSeen++
      held.push(res)
    })
  })
  const answerAll = (): void => {
    for (const res of held.splice(0)) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"id":"c","object":"chat.completion","choices":[]}')
    }
  }
  let gateway: GatewayModule
  let server: http.Server
  let url: string
  let port: number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-body-budget-'))

  beforeAll(async () => {
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r))
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        NODE1_HOST: '127.0.0.1',
        NODE1_USER: 'sim',
        LLM_PORT: String((llm.address() as AddressInfo).port),
      },
    })
    const logger = createLogger({ redactor: new Redactor(), sink: new MemorySink() })
    gateway = await createGatewayModule({
      config,
      clock: systemClock,
      logger,
      jobs: new JobRegistry(systemClock, logger.redactor),
      events: new EventBus(systemClock),
      limits: new Limits({ clock: systemClock, publicPerMinute: 0 }),
      services: new ServiceDirectory(config),
      deepHealth: { requestProbe: () => 'unavailable' },
      options: { bodyBudgetBytes: 2 * MiB },
    })
    const app = express()
    const router = express.Router()
    gateway.mountRoutes!(router)
    app.use(router)
    // What the edge records first: every request here comes from one address.
    server = http.createServer((req, res) => {
      requestState(res).client = { ip: '127.0.0.1', limitKey: '127.0.0.1', secure: false, onLan: true }
      void app(req, res)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
    url = `http://127.0.0.1:${port}`
  })
  afterAll(async () => {
    answerAll()
    server?.closeAllConnections()
    await new Promise((r) => server?.close(r))
    await gateway?.stop?.()
    llm.closeAllConnections()
    await new Promise((r) => llm.close(r))
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('refuses bodies beyond the budget with 503, Retry-After and OpenAI’s error shape, then takes them again', async () => {
    const first = [post(url, chatBody(200 * KiB)), post(url, chatBody(200 * KiB))]
    await waitFor(() => held.length === 2)
    // The two held bodies fill this address's half of the budget: a third, declared or chunked, is refused.
    for (const chunked of [false, true]) {
      const refused = await post(url, chatBody(200 * KiB), chunked)
      expect(refused.status, `chunked: ${chunked}`).toBe(503)
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      const err = JSON.parse(refused.body) as { error: { message: string; type: string; code: string } }
      expect(err.error.type).toBe('api_error')
      expect(err.error.code).toBe('unavailable')
      expect(err.error.message).toMatch(/no room for this request body/)
    }
    expect(bodiesSeen).toBe(2)
    answerAll()
    for (const r of await Promise.all(first)) expect(r.status).toBe(200)
    // Released when the answers ended: two more fit again.
    const again = [post(url, chatBody(200 * KiB), true), post(url, chatBody(200 * KiB))]
    await waitFor(() => held.length === 2)
    answerAll()
    for (const r of await Promise.all(again)) expect(r.status).toBe(200)
  })

  it('refuses with 413 a body larger than one address may ever hold', async () => {
    const r = await post(url, chatBody(512 * KiB + KiB))
    expect(r.status).toBe(413)
    expect((JSON.parse(r.body) as { error: { type: string } }).error.type).toBe('invalid_request_error')
  })

  it('gives back what a request held when its client leaves mid-body or while waiting for the answer', async () => {
    // Mid-body: two declared 225 KiB bodies, most of each sent (bytes are charged as they arrive), then dropped.
    const partial = [await partialPost(port, 225 * KiB, 220 * KiB), await partialPost(port, 225 * KiB, 220 * KiB)]
    await new Promise((r) => setTimeout(r, 100)) // their heads are read and charged
    const refusedMeanwhile = await post(url, chatBody(200 * KiB))
    expect(refusedMeanwhile.status).toBe(503)
    for (const s of partial) s.destroy()
    // Waiting for the answer: two whole bodies sent upstream, then the clients leave.
    const waiting = [await partialPost(port, 225 * KiB, 225 * KiB), await partialPost(port, 225 * KiB, 225 * KiB)]
    await waitFor(() => held.length === 2)
    for (const s of waiting) s.destroy()
    await waitFor(() => held.every((res) => res.destroyed))
    held.splice(0)
    // Nothing is left charged: two bodies fill this address's share again.
    const after = [post(url, chatBody(225 * KiB)), post(url, chatBody(225 * KiB))]
    await waitFor(() => held.length === 2)
    answerAll()
    for (const r of await Promise.all(after)) expect(r.status).toBe(200)
  })
})
