import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * V8 reads typed arrays without checking whether their buffer was detached until some buffer in
 * the process is; from then on every read in the process pays the check. The global fetch reads
 * answer bodies through web byte streams, which detach one per chunk, so a daemon that made a
 * single health probe with fetch read every relayed body 20–35 % slower per byte for the rest
 * of its life (docs/gateway-profile.md, eleventh pass). The built daemon runs here with V8's
 * protector trace on, makes its own calls out to the sim (status, deep-health probes of asr, tts
 * and llm), and must not have lost the fast path.
 */
const root = path.resolve(__dirname, '../../..')
const bundle = path.join(root, 'out/main/index.js')
const TRACE = '--trace-protector-invalidation'
const LOST = 'Invalidating protector cell ArrayBufferDetaching'

let sim: FullSim | null = null
let child: ChildProcess | null = null
let dataDir = ''
afterAll(async () => {
  child?.kill('SIGKILL')
  await sim?.close()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

function waitForListening(proc: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = ''
    proc.stderr!.on('data', (b: Buffer) => {
      seen += b.toString()
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(seen)
      if (m?.[1]) resolve(m[1])
    })
    proc.once('exit', (code) => reject(new Error(`daemon exited with ${code}: ${seen}`)))
  })
}

describe("the daemon's own calls out", () => {
  it('are seen by the trace this test reads: one detached buffer shows in it', () => {
    const control = spawnSync(
      process.execPath,
      [TRACE, '-e', 'const b = new ArrayBuffer(8); structuredClone(b, { transfer: [b] })'],
      { encoding: 'utf8' },
    )
    expect(control.stdout).toContain(LOST)
  })

  it('leave typed-array reads unchecked: status and deep-health probes of asr, tts and llm detach nothing', async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-fast-path-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    child = spawn(process.execPath, [TRACE, bundle, '--headless'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: dataDir,
        ...sim.env(),
        DATA_DIR: dataDir,
        PORT: '0',
        BIND: '127.0.0.1',
        RATE_SOURCES: 'http://127.0.0.1:9',
        MONITOR_INTERVAL_S: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let trace = ''
    child.stdout!.on('data', (b: Buffer) => (trace += b.toString()))
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
    await status.arrayBuffer()

    expect(trace).not.toContain(LOST)
  })
})
