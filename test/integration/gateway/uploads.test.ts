import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { JobRegistry } from '../../../src-main/platform/jobs'
import { EventBus } from '../../../src-main/platform/eventBus'
import { Limits } from '../../../src-main/platform/limits'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import { createGatewayModule, type GatewayModule, type GatewayOptions } from '../../../src-main/gateway/module'
import { startFakeAsr, type FakeAsr } from '../../sim/http'
import { silenceWav, waitFor } from './setup'

/**
 * Upload limits of the gateway (idle timeout, size cap, spool budget, free-disk floor), each
 * with small values passed as gateway options, against a loopback asr.
 */
describe('gateway uploads', () => {
  let asr: FakeAsr
  const open: { gateway: GatewayModule; server: http.Server; dataDir: string }[] = []

  beforeAll(async () => {
    asr = await startFakeAsr()
  })
  afterAll(async () => {
    await asr?.close()
  })
  afterEach(async () => {
    for (const o of open.splice(0)) {
      o.server.closeAllConnections()
      await new Promise<void>((r) => o.server.close(() => r()))
      await o.gateway.stop?.()
      fs.rmSync(o.dataDir, { recursive: true, force: true })
    }
  })

  /** The gateway's raw routes alone behind a plain HTTP server; returns its URL and spool folder. */
  async function startGateway(options: Partial<GatewayOptions>): Promise<{ url: string; port: number; spool: string }> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-uploads-'))
    const config = loadConfig({
      env: { DATA_DIR: dataDir, NODE2_HOST: '127.0.0.1', NODE2_USER: 'sim', ASR_PORT: String(asr.port) },
    })
    const logger = createLogger({ redactor: new Redactor(), sink: new MemorySink() })
    const gateway = await createGatewayModule({
      config,
      clock: systemClock,
      logger,
      jobs: new JobRegistry(systemClock, logger.redactor),
      events: new EventBus(systemClock),
      limits: new Limits({ clock: systemClock, publicPerMinute: 0 }),
      services: new ServiceDirectory(config),
      deepHealth: { requestProbe: () => 'unavailable' },
      options,
    })
    const app = express()
    const router = express.Router()
    gateway.mountRoutes!(router)
    app.use(router)
    const server = http.createServer(app)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    open.push({ gateway, server, dataDir })
    const port = (server.address() as AddressInfo).port
    const root = path.join(dataDir, 'tmp')
    const dir = fs.readdirSync(root).find((d) => d.startsWith('uploads-'))!
    return { url: `http://127.0.0.1:${port}`, port, spool: path.join(root, dir) }
  }

  const BOUNDARY = 'tandem-test-boundary'
  /** A multipart body with one `file` part of `size` bytes: its head, its file bytes and its tail. */
  function form(size: number): { head: Buffer; file: Buffer; tail: Buffer; length: number } {
    const head = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    )
    const file = silenceWav(Math.max(0, (size - 44) / 32000)).subarray(0, size)
    const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
    return { head, file, tail, length: head.length + file.length + tail.length }
  }

  /** Opens a raw connection and sends the request head plus `send` of the body; collects what comes back. */
  async function startRawUpload(
    port: number,
    route: string,
    size: number,
    sendBytes: number,
  ): Promise<{ socket: net.Socket; received: () => string; closed: () => boolean }> {
    const f = form(size)
    const socket = net.connect(port, '127.0.0.1')
    await new Promise<void>((r) => socket.once('connect', () => r()))
    let received = ''
    let closed = false
    socket.on('data', (c: Buffer) => (received += c.toString('latin1')))
    socket.on('error', () => undefined)
    socket.once('close', () => (closed = true))
    socket.write(
      `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
        `Content-Length: ${f.length}\r\n\r\n`,
    )
    socket.write(Buffer.concat([f.head, f.file, f.tail]).subarray(0, sendBytes))
    return { socket, received: () => received, closed: () => closed }
  }

  const spoolFiles = (spool: string): string[] => fs.readdirSync(spool)

  it('answers a stalled multipart upload with 408 and removes its spool file', async () => {
    const gw = await startGateway({ uploadIdleMs: 300 })
    const up = await startRawUpload(gw.port, '/api/audio/transcribe-with-speakers', 200_000, 100_000)
    await waitFor(() => up.closed(), 10_000)
    expect(up.received()).toMatch(/^HTTP\/1\.1 408 /)
    expect(up.received()).toMatch(/no upload bytes/)
    await waitFor(() => spoolFiles(gw.spool).length === 0)
  })

  it('removes the spool file when the client goes away mid-upload', async () => {
    const gw = await startGateway({})
    const up = await startRawUpload(gw.port, '/api/audio/transcribe-with-speakers', 400_000, 200_000)
    await waitFor(() => spoolFiles(gw.spool).length === 1)
    up.socket.destroy()
    await waitFor(() => spoolFiles(gw.spool).length === 0)
  })

  it('answers a stalled relayed upload with 408 and releases the asr request', async () => {
    const gw = await startGateway({ uploadIdleMs: 300 })
    const before = asr.requests.length
    const up = await startRawUpload(gw.port, '/v1/audio/transcriptions', 200_000, 100_000)
    await waitFor(() => up.closed(), 10_000)
    expect(up.received()).toMatch(/^HTTP\/1\.1 408 /)
    await waitFor(() => asr.openRequests === 0)
    for (const r of asr.requests.slice(before)) expect(r.finished).toBe(false)
  })

  it('refuses an upload with 507 when DATA_DIR would drop below the free-disk floor', async () => {
    const gw = await startGateway({ diskFloorBytes: Number.MAX_SAFE_INTEGER })
    const before = asr.requests.length
    const fd = new FormData()
    fd.append('file', new Blob([new Uint8Array(silenceWav(1))]), 'a.wav')
    const res = await fetch(gw.url + '/api/audio/transcribe-with-speakers', { method: 'POST', body: fd })
    expect(res.status).toBe(507)
    expect(((await res.json()) as { detail: string }).detail).toMatch(/free disk space/)
    expect(asr.requests.length).toBe(before)
    expect(spoolFiles(gw.spool)).toEqual([])
  })

  it('refuses an upload with 503 and Retry-After while other uploads hold the spool budget', async () => {
    const gw = await startGateway({ spoolBudgetBytes: 64 * 1024 })
    // One upload declares 48 KiB and stalls half way: its reservation holds most of the budget.
    const held = await startRawUpload(gw.port, '/api/audio/transcribe-with-speakers', 48 * 1024, 20 * 1024)
    await waitFor(() => spoolFiles(gw.spool).length === 1)
    const post = (): Promise<Response> => {
      const fd = new FormData()
      fd.append('file', new Blob([new Uint8Array(silenceWav(1).subarray(0, 32 * 1024))]), 'b.wav')
      return fetch(gw.url + '/api/audio/transcribe-with-speakers', { method: 'POST', body: fd })
    }
    const refused = await post()
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).not.toBeNull()
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/spool/)
    held.socket.destroy()
    await waitFor(() => spoolFiles(gw.spool).length === 0)
    expect((await post()).status).toBe(200)
    await waitFor(() => spoolFiles(gw.spool).length === 0)
  })

  it('refuses an upload over the size cap with 413 and keeps no spool file', async () => {
    const gw = await startGateway({ uploadMaxBytes: 16 * 1024 })
    for (const route of ['/api/audio/transcribe-with-speakers', '/v1/audio/transcriptions']) {
      const fd = new FormData()
      fd.append('file', new Blob([new Uint8Array(silenceWav(1))]), 'a.wav')
      const res = await fetch(gw.url + route, { method: 'POST', body: fd })
      expect(res.status, route).toBe(413)
    }
    await waitFor(() => spoolFiles(gw.spool).length === 0)
  })
})
