import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ModelsModule } from '../../../src-main/models/module'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'

/** SWAP_ON_DEMAND=on: a request naming a catalog model that is not loaded swaps to it and waits. */
describe('swap on demand', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-ondemand-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0', SWAP_ON_DEMAND: 'on' }, dataDir })
    for (const def of [
      { key: 'first', name: 'First', repo: 'sim/first' },
      { key: 'second', name: 'Second', repo: 'sim/second' },
    ])
      expect((await daemon.admin('/api/models', { method: 'POST', body: JSON.stringify(def) })).status).toBe(200)
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('a chat request for another catalog model starts a swap, is held, and is answered by that model', async () => {
    const models = daemon.core.modules.find((m) => m.name === 'models') as unknown as ModelsModule
    sim.llm.holdLoads(true)
    const res = fetch(`${daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/second', messages: [{ role: 'user', content: 'hi' }] }),
    })
    for (let i = 0; i < 2000 && sim.llm.loading !== 'sim/second'; i++) await new Promise((r) => setTimeout(r, 10))
    expect(sim.llm.loading).toBe('sim/second')
    expect(models.swap.held).toBe(1)
    sim.llm.releaseLoads()
    const answered = await res
    expect(answered.status).toBe(200)
    expect(((await answered.json()) as { model: string }).model).toBe('sim/second')
    const swaps = daemon.core.jobs.list('swap')
    expect(swaps).toHaveLength(1)
    expect(swaps[0]).toMatchObject({ state: 'succeeded', title: 'Swap to Second (solo on node1)' })
    // A request for the loaded model, or one the catalog does not know, starts nothing.
    sim.llm.holdLoads(false)
    for (const model of ['sim/second', 'org/unknown'])
      await fetch(`${daemon.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      })
    expect(daemon.core.jobs.list('swap')).toHaveLength(1)
  })

  it('does not replace a model whose engine is busy, even with requests that did not come through Tandem', async () => {
    const models = daemon.core.modules.find((m) => m.name === 'models') as unknown as ModelsModule
    await sim.llm.setFault({ kind: 'slow', delayMs: 200 })
    const direct = new AbortController()
    const stream = await fetch(`${sim.llm.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/second', stream: true, messages: [{ role: 'user', content: 'a b c d e f' }] }),
      signal: direct.signal,
    })
    await stream.body!.getReader().read()
    try {
      await models.engineMetrics.scrape()
      expect(models.engineBusy('node1')).toBe(true)
      const res = await fetch(`${daemon.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/first', messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(503)
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(JSON.stringify(await res.json())).toMatch(/requests running or waiting/)
      expect(daemon.core.jobs.list('swap')).toHaveLength(1)
    } finally {
      direct.abort()
      await sim.llm.setFault('none')
    }
  })
})
