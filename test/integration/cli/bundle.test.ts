import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { VERSION } from '../../../src-main/lib/version'
import { freePort } from '../../helpers/builtDaemon'

const root = path.resolve(__dirname, '../../..')
const bin = path.join(root, 'bin/tandem.mjs')
const children: ChildProcess[] = []
const dirs: string[] = []
afterAll(() => {
  for (const c of children) c.kill('SIGKILL')
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-bin-'))
  dirs.push(d)
  return d
}

describe('the built `tandem` command (bin/tandem.mjs → out/main/cli.js)', () => {
  it('prints the version and, from the package manifest, is the bin named tandem', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }
    expect(pkg.bin).toEqual({ tandem: 'bin/tandem.mjs' })
    const res = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8' })
    expect(res.status).toBe(0)
    expect(res.stdout.trim()).toBe(VERSION.replace(/:(\d+)$/, ' (build $1)'))
  })

  it('tandem serve runs the headless daemon with the dashboard, and stops on SIGTERM', async () => {
    const dataDir = tempDir()
    const child = spawn(process.execPath, [bin, '--data-dir', dataDir, 'serve'], {
      cwd: tempDir(),
      env: {
        PATH: process.env.PATH,
        HOME: dataDir,
        PORT: String(await freePort()),
        BIND: '127.0.0.1',
        RATE_SOURCES: 'http://127.0.0.1:9',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let logs = ''
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (b: Buffer) => {
        logs += b.toString()
        const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(logs)
        if (m?.[1]) resolve(m[1])
      })
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${logs}`)))
    })
    const health = (await (await fetch(`${url}/api/health`)).json()) as { version: string }
    expect(health.version).toBe(VERSION)
    // The renderer is found from the shared chunk too (it lives beside the entries).
    const page = await fetch(`${url}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app">')
    expect(fs.existsSync(path.join(dataDir, 'admin-token'))).toBe(true)

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(logs).toContain('SIGTERM: stopping')
  })
})
