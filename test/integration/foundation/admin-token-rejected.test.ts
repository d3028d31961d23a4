import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/**
 * A daemon whose admin-token file is rejected (issue 33, item 7): it starts, says why in the log
 * and how to set a new token, refuses every admin call with a 401 that says so, and never writes
 * a token of its own over the operator's file.
 */
describe('a rejected admin-token file', () => {
  const short = 'tooshort42'
  let dataDir: string
  let d: TestDaemon
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-badtoken-'))
    fs.writeFileSync(path.join(dataDir, 'admin-token'), `${short}\n`, { mode: 0o600 })
    d = await startDaemon({ dataDir })
  })
  afterAll(async () => {
    await d?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('starts, and logs an error saying why and how to set a new token', async () => {
    expect((await fetch(`${d.url}/api/health`)).status).toBe(200)
    const line = d.logs.lines.find((l) => l.includes(' ERROR ') && l.includes('admin token'))
    expect(line).toBeDefined()
    expect(line).toContain(path.join(dataDir, 'admin-token'))
    expect(line).toMatch(/too short \(10 characters; at least 16\)/)
    expect(line).toContain('tandem admin-token --reset')
    expect(d.logs.lines.join('\n')).not.toContain(short)
  })

  it('refuses every admin call with a 401 saying the token file is invalid, the old token included', async () => {
    for (const bearer of [short, 'some-guess-that-is-long-enough', '']) {
      const res = await fetch(`${d.url}/api/config`, { headers: { Authorization: `Bearer ${bearer}` } })
      expect(res.status).toBe(401)
      const text = await res.text()
      expect(text).toMatch(/admin token file .*is invalid/)
      expect(text).toContain('tandem admin-token --reset')
      expect(text).not.toContain(short)
    }
    const login = await fetch(`${d.url}/api/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: short }),
    })
    expect(login.status).toBe(401)
    expect(login.headers.get('set-cookie')).toBeNull()
    expect(await login.text()).toMatch(/admin token file .*is invalid/)
  })

  it('leaves the file as it was: nothing is regenerated behind the operator', () => {
    expect(fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8')).toBe(`${short}\n`)
    expect(d.core.adminToken).toBeNull()
  })
})
