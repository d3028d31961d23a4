import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { AuditLog } from '../../../src-main/licensing/audit'
import { openLicensingDb, type LicensingDb } from '../../../src-main/licensing/db'

describe('the audit log never keeps a password from a URL', () => {
  let dir: string
  let db: LicensingDb
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-audit-'))
    db = openLicensingDb(path.join(dir, 'licensing.sqlite'))
  })
  afterEach(() => {
    db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('masks URL credentials on the way in, so the database holds none', () => {
    const audit = new AuditLog(db, new ManualClock())
    audit.record({
      actor: 'admin',
      action: 'webhook.create',
      details: { url: 'https://hook:pa55word@shop.example/hook', nested: { base_url: 'http://u:p@btcpay.lan' } },
    })
    const raw = db.prepare('SELECT details FROM audit_log').get() as { details: string }
    expect(raw.details).not.toMatch(/pa55word|u:p@/)
    const [entry] = audit.list({ limit: 1 })
    expect(entry?.details).toEqual({
      url: 'https://hook:***@shop.example/hook',
      nested: { base_url: 'http://u:***@btcpay.lan' },
    })
  })

  it('masks them on the way out too, for entries written before', () => {
    db.prepare(
      "INSERT INTO audit_log (at, actor, action, target_type, target_id, details) VALUES (1, 'admin', 'x', NULL, NULL, ?)",
    ).run(JSON.stringify({ url: 'https://a:old-secret@h.example/' }))
    const [entry] = new AuditLog(db, new ManualClock()).list({ limit: 1 })
    expect(entry?.details).toEqual({ url: 'https://a:***@h.example/' })
  })
})
