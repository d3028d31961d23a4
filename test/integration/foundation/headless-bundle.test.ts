import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, waitForListening } from '../../helpers/builtDaemon'

const root = path.resolve(__dirname, '../../..')
const bundle = path.join(root, 'out/main/index.js')
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) c.kill('SIGKILL')
})

/** Waits for the line the daemon logs once it listens, and returns the URL in it. */

describe('the built headless daemon', () => {
  it('is built (npm test builds before running the suites)', () => {
    expect(fs.existsSync(bundle)).toBe(true)
  })

  it('runs where the electron package cannot load', async () => {
    // In this environment the electron binary is absent, so requiring electron throws.
    const probe = spawnSync(process.execPath, ['-e', "require('electron')"], { cwd: root, encoding: 'utf8' })
    expect(probe.status).not.toBe(0)

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bundle-'))
    const child = spawn(process.execPath, [bundle], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: dataDir,
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        BIND: '127.0.0.1',
        LLM_PORT: 'abc',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let logs = ''
    child.stderr.on('data', (b: Buffer) => (logs += b.toString()))
    const url = await waitForListening(child)
    const health = await fetch(`${url}/api/health`)
    expect(health.status).toBe(200)
    // The dashboard is served from the built renderer.
    const page = await fetch(`${url}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app">')
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    const icon = await fetch(`${url}/favicon.svg`)
    expect(icon.headers.get('content-type')).toContain('image/svg+xml')
    // A malformed number was reported once and did not stop start-up.
    expect(logs.match(/LLM_PORT from environment is invalid/g)).toHaveLength(1)
    expect(logs).toContain(`admin token in ${path.join(dataDir, 'admin-token')}`)

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(logs).toContain('SIGTERM: stopping')
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
})
