import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startFullSim, type FullSim } from '../../sim/full'
import { freePort, waitForListening } from '../../helpers/builtDaemon'

/**
 * The built daemon (out/main/index.js), run as its own process on the Node that runs the tests,
 * makes its own calls out to the sim: the deep-health probes of asr, tts and llm (one real request
 * each) and the status the dashboard reads. The in-process suites cover the same calls from the
 * sources; this one covers the bundle as it ships.
 */
const root = path.resolve(__dirname, '../../..')
const bundle = path.join(root, 'out/main/index.js')

let sim: FullSim | null = null
let child: ChildProcess | null = null
let dataDir = ''
afterAll(async () => {
  child?.kill('SIGKILL')
  await sim?.close()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

describe("the built daemon's own calls out", () => {
  it('answers status and probes asr, tts and llm, one request to asr', async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-built-daemon-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    child = spawn(process.execPath, [bundle, '--headless'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: dataDir,
        ...sim.env(),
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        BIND: '127.0.0.1',
        RATE_SOURCES: 'http://127.0.0.1:9',
        MONITOR_INTERVAL_S: '0',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    const url = await waitForListening(child)
    const token = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()
    const admin = (pathname: string, method = 'GET'): Promise<globalThis.Response> =>
      fetch(`${url}${pathname}`, { method, headers: { authorization: `Bearer ${token}` } })

    const asrCalls = sim.asr.requests.length
    for (const service of ['asr', 'tts', 'llm']) {
      const res = await admin(`/api/deep-health/${service}/run`, 'POST')
      const body = (await res.json()) as { ok: boolean; error: string | null }
      expect(res.status).toBe(200)
      expect(body, JSON.stringify(body)).toMatchObject({ ok: true })
    }
    expect(sim.asr.requests.length).toBe(asrCalls + 1)
    const status = await admin('/api/status')
    expect(status.status).toBe(200)
    expect(await status.json()).toBeTypeOf('object')
  })
})
