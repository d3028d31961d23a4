import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ensureAdminToken } from '../../../src-main/app/adminToken'
import { SessionStore } from '../../../src-main/app/sessions'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'

/** A rejected admin-token file is refused loudly and never silently replaced (issue 33, item 7). */
let dir: string
let file: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-admintoken-'))
  file = path.join(dir, 'admin-token')
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const write = (text: string, mode = 0o600): void => {
  fs.writeFileSync(file, text, { mode })
  fs.chmodSync(file, mode)
}

describe('the admin-token file', () => {
  it('is created on first start (a new install), mode 0600', () => {
    const res = ensureAdminToken(null, file)
    expect(res).toMatchObject({ ok: true, source: 'file' })
    if (!res.ok) throw new Error('rejected')
    expect(res.token).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(res.token)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(ensureAdminToken(null, file)).toEqual(res)
  })

  it('accepts an operator-written token of printable characters', () => {
    write('my-own.admin~token+42\n')
    expect(ensureAdminToken(null, file)).toEqual({ ok: true, token: 'my-own.admin~token+42', source: 'file' })
  })

  const rejected: [string, () => void, RegExp][] = [
    ['empty', () => write(''), /is empty/],
    ['only whitespace', () => write('  \n'), /is empty/],
    ['too short', () => write('short-token\n'), /too short \(11 characters; at least 16\)/],
    ['wrong characters', () => write('a token with spaces in it\n'), /characters other than printable ASCII/],
    ['non-ASCII', () => write('tökentökentökentöken\n'), /characters other than printable ASCII/],
    ['readable by others', () => write('a-perfectly-long-token-1234', 0o644), /mode 0644.*must be 0600/],
    ['a folder', () => fs.mkdirSync(file), /not a regular file/],
  ]
  for (const [name, setUp, reason] of rejected) {
    it(`is refused, not regenerated, when ${name}`, () => {
      setUp()
      const before = fs.statSync(file)
      const content = before.isFile() ? fs.readFileSync(file, 'utf8') : null
      const res = ensureAdminToken(null, file)
      expect(res).toMatchObject({ ok: false, file })
      if (res.ok) throw new Error('accepted')
      expect(res.reason).toMatch(reason)
      // Left exactly as it was: the operator's file is theirs to fix.
      const after = fs.statSync(file)
      expect(after.mode).toBe(before.mode)
      if (content !== null) expect(fs.readFileSync(file, 'utf8')).toBe(content)
    })
  }

  it('the reason never carries the token', () => {
    write('secret-but-too-short'.slice(0, 12))
    const res = ensureAdminToken(null, file)
    if (res.ok) throw new Error('accepted')
    expect(res.reason).not.toContain('secret-but-t')
  })

  it('ADMIN_TOKEN wins and the file is not looked at', () => {
    write('')
    expect(ensureAdminToken('configured-token-123456', file)).toEqual({
      ok: true,
      token: 'configured-token-123456',
      source: 'setting',
    })
  })

  it('with the file rejected, no earlier session opens and no new one is issued', () => {
    const clock = new ManualClock()
    const logger = createLogger({ sink: { write: () => undefined } })
    const sessionsFile = path.join(dir, 'sessions.json')
    const before = new SessionStore({ file: sessionsFile, adminToken: 'a-perfectly-long-token-1234', clock, logger })
    const cookie = before.issue().value
    const rejected = new SessionStore({ file: sessionsFile, adminToken: null, clock, logger })
    expect(rejected.verify(cookie)).toBe(false)
    expect(() => rejected.issue()).toThrow(/valid admin token/)
  })
})
