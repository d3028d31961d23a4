import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import { Limits } from '../../../src-main/platform/limits'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import type { DeepHealthResult } from '../../../src-main/contract/services'
import { createGatewayModule, type GatewayModule } from '../../../src-main/gateway/module'
import { JobRegistry } from '../../../src-main/platform/jobs'
import { DeepHealth } from '../../../src-main/services/deepHealth'
import { DEEP_HEALTH_PROBES } from '../../../src-main/gateway/deepHealthProbes'
import type { ServiceControl } from '../../../src-main/services/types'
import { startFakeAsr, startFakeTts, type FakeAsr, type FakeTts } from '../../sim/http'

/**
 * The gateway's asr-500 path (spec 1, 7) with the real deep health behind its hook: the 503 says
 * what deep health does, and a real probe of the asr runs (and sees the wedge).
 */
describe('the gateway asks deep health for a real probe', () => {
  let asr: FakeAsr
  let tts: FakeTts
  let gateway: GatewayModule
  let server: http.Server
  let url: string
  let dataDir: string
  let deepHealth: DeepHealth
  const results: DeepHealthResult[] = []
  const restarts: string[] = []

  beforeAll(async () => {
    ;[asr, tts] = await Promise.all([startFakeAsr(), startFakeTts()])
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-dh-gateway-'))
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        NODE2_HOST: '127.0.0.1',
        NODE2_USER: 'sim',
        ASR_PORT: String(asr.port),
        TTS_PORT: String(tts.port),
      },
    })
    const clock = new ManualClock(Date.now())
    const logger = createLogger({ redactor: new Redactor(), sink: new MemorySink() })
    const events = new EventBus(clock)
    const publish = events.publish.bind(events)
    events.publish = (name, data) => {
      if (name === 'deephealth.result') results.push(data as DeepHealthResult)
      publish(name, data)
    }
    const services = new ServiceDirectory(config)
    const control: ServiceControl = {
      locate: (name) => {
        const role = name === 'asr' || name === 'tts' ? services.role(name) : null
        return role?.ssh ? { name, ssh: role.ssh, container: role.container, baseUrl: role.baseUrl } : null
      },
      restart: async (name) => {
        restarts.push(name)
      },
    }
    deepHealth = new DeepHealth({
      control,
      directory: services,
      pool: { exec: async () => ({ code: 1, signal: null, stdout: '', stderr: 'no ssh here' }) },
      connectivity: { report: async () => null },
      events,
      clock,
      logger,
      intervalS: 300,
      swapBusy: () => false,
      probes: DEEP_HEALTH_PROBES,
    })
    gateway = await createGatewayModule({
      config,
      clock,
      logger,
      jobs: new JobRegistry(clock, logger.redactor),
      events,
      limits: new Limits({ clock, publicPerMinute: 0 }),
      services,
      deepHealth,
    })
    const app = express()
    const router = express.Router()
    gateway.mountRoutes!(router)
    app.use(router)
    server = http.createServer(app)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    deepHealth.stop()
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
    await gateway.stop?.()
    await Promise.all([asr.close(), tts.close()])
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** Resolves with the first published result for `service` after `from` results. */
  async function nextResult(service: string, from: number): Promise<DeepHealthResult> {
    for (;;) {
      const found = results.slice(from).find((r) => r.service === service)
      if (found) return found
      await new Promise((r) => setImmediate(r))
    }
  }

  it('answers a wedged asr with 503 saying a probe was started, and that probe runs', async () => {
    asr.wedge()
    const before = asr.requests.filter((r) => r.path === '/v1/audio/transcriptions').length
    const seen = results.length
    const fd = new FormData()
    fd.append('file', new Blob([new Uint8Array(1000)]), 'a.wav')
    const res = await fetch(url + '/v1/audio/transcriptions', { method: 'POST', body: fd })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('60')
    const detail = ((await res.json()) as { detail: string }).detail
    expect(detail).toMatch(/^asr failed \(HTTP 500: CUDA error: cudaErrorUnknown/)
    expect(detail).toMatch(/a deep-health probe of the asr (was started|is already running), retry in 60 s$/)
    const probe = await nextResult('asr', seen)
    expect(probe).toMatchObject({ ok: false, wedged: true, restart: { requested: true } })
    // The client's request and deep health's own silence probe both reached the asr.
    expect(asr.requests.filter((r) => r.path === '/v1/audio/transcriptions').length).toBe(before + 2)
    asr.containerStarted()
  })

  it('answers a tts 500 on speech the same way, naming the tts probe', async () => {
    await tts.setFault('error500')
    try {
      const seen = results.length
      const res = await fetch(url + '/v1/audio/speech', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ voice: 'Multivoice.EN-US.Aria', input: 'hi' }),
      })
      expect(res.status).toBe(503)
      expect(((await res.json()) as { detail: string }).detail).toMatch(
        /a deep-health probe of the tts (was started|is already running), retry in 60 s$/,
      )
      expect(await nextResult('tts', seen)).toMatchObject({ ok: false, wedged: true })
    } finally {
      await tts.setFault('none')
    }
  })
})
