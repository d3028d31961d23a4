import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { appliedMigrations, checkDatabase, openLicensingDb, runMigrations } from '../../../src-main/licensing/db'
import { MIGRATIONS } from '../../../src-main/licensing/migrations'
import { m004ProductPriceChecks } from '../../../src-main/licensing/migrations/004_product_price_checks'
import { m011SubscriptionDueDate } from '../../../src-main/licensing/migrations/011_subscription_due_date'
import { m012PaymentFlags } from '../../../src-main/licensing/migrations/012_payment_flags'
import { m016TopUpInvoices } from '../../../src-main/licensing/migrations/016_top_up_invoices'

function tmpFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lic-db-')), 'licensing.sqlite')
}

/** Fills a database at migration level 3 (before the products rebuild) with rows in every related table. */
function populateAtLevel3(file: string) {
  const db = openLicensingDb(file, { upTo: 3 })
  const t = 1_700_000_000_000
  db.prepare(
    `INSERT INTO products (id, slug, name, price_sats, created_at, updated_at, price_currency, price_value)
     VALUES ('p1', 'app', 'App', 5000, ?, ?, 'SAT', 5000),
            ('p2', 'legacy', 'Legacy', 700, ?, ?, 'SAT', 0),
            ('p3', 'fiat', 'Fiat', 0, ?, ?, 'usd', 1999)`,
  ).run(t, t, t, t, t, t)
  db.prepare(
    `INSERT INTO policies (id, product_id, slug, name, created_at, updated_at, tier_rank) VALUES
     ('pol1', 'p1', 'basic', 'Basic', ?, ?, 1), ('pol2', 'p1', 'pro', 'Pro', ?, ?, 2)`,
  ).run(t, t, t, t)
  db.prepare(
    `INSERT INTO invoices (id, product_id, policy_id, amount_sats, status, created_at, updated_at)
     VALUES ('inv1', 'p1', 'pol1', 5000, 'pending', ?, ?)`,
  ).run(t, t)
  db.prepare(
    `INSERT INTO licenses (id, product_id, policy_id, invoice_id, source, license_key, issued_at, updated_at)
     VALUES ('lic1', 'p1', 'pol1', 'inv1', 'purchase', 'LIC1-X-Y', ?, ?)`,
  ).run(t, t)
  db.prepare(`UPDATE invoices SET status = 'settled', issued_license_id = 'lic1' WHERE id = 'inv1'`).run()
  db.prepare(
    `INSERT INTO machines (id, license_id, fingerprint_hash, activated_at, last_heartbeat_at)
     VALUES ('m1', 'lic1', ?, ?, ?)`,
  ).run('a'.repeat(64), t, t)
  db.prepare(
    `INSERT INTO discount_codes (id, code, kind, value, product_id, created_at, updated_at)
     VALUES ('d1', 'TEN', 'percent', 10, 'p1', ?, ?)`,
  ).run(t, t)
  db.close()
}

describe('licensing migrations', () => {
  it('applies every migration once, records each, and re-running is a no-op', () => {
    const file = tmpFile()
    const db = openLicensingDb(file)
    expect(appliedMigrations(db)).toEqual(MIGRATIONS.map((m) => m.id))
    expect(runMigrations(db)).toEqual([])
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
    db.close()
    const again = openLicensingDb(file)
    expect(appliedMigrations(again)).toEqual(MIGRATIONS.map((m) => m.id))
    again.close()
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    // SQLite gives the WAL the database file's mode: the secrets in it stay owner-only too.
    const w = openLicensingDb(file)
    w.prepare(`INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 0)`).run()
    expect(fs.statSync(`${file}-wal`).mode & 0o777).toBe(0o600)
    w.close()
  })

  it('rebuilds products on a populated level-3 database with clean foreign-key and integrity checks', () => {
    const file = tmpFile()
    populateAtLevel3(file)
    const db = openLicensingDb(file)
    expect(appliedMigrations(db)).toContain(4)
    expect(checkDatabase(db)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    const rows = db.prepare('SELECT id, price_sats, price_currency, price_value FROM products ORDER BY id').all()
    expect(rows).toEqual([
      { id: 'p1', price_sats: 5000, price_currency: 'SAT', price_value: 5000 },
      { id: 'p2', price_sats: 700, price_currency: 'SAT', price_value: 700 },
      { id: 'p3', price_sats: 0, price_currency: 'USD', price_value: 1999 },
    ])
    // Children still point at the rebuilt table, and foreign keys are enforced on it.
    expect(db.prepare("SELECT count(*) AS n FROM licenses WHERE product_id = 'p1'").get()).toEqual({ n: 1 })
    expect(() => db.prepare("DELETE FROM products WHERE id = 'p1'").run()).toThrow(/FOREIGN KEY/)
    // The new CHECKs hold.
    expect(() => db.prepare("UPDATE products SET price_currency = 'GBP' WHERE id = 'p1'").run()).toThrow(/CHECK/)
    expect(() => db.prepare("UPDATE products SET price_value = 1 WHERE id = 'p1'").run()).toThrow(/CHECK/)
    db.close()
  })

  it('the rebuild is idempotent when run again by hand', () => {
    const file = tmpFile()
    populateAtLevel3(file)
    const db = openLicensingDb(file)
    const before = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'products'").get()
    db.pragma('foreign_keys = OFF')
    db.transaction(() => m004ProductPriceChecks.up(db))()
    db.pragma('foreign_keys = ON')
    expect(db.prepare("SELECT sql FROM sqlite_master WHERE name = 'products'").get()).toEqual(before)
    expect(checkDatabase(db)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    db.close()
  })

  it('level 2 backfills price_value from legacy price_sats', () => {
    const file = tmpFile()
    const db = openLicensingDb(file, { upTo: 1 })
    db.prepare(
      `INSERT INTO products (id, slug, name, price_sats, created_at, updated_at) VALUES ('p', 's', 'n', 4200, 0, 0)`,
    ).run()
    db.prepare(
      `INSERT INTO policies (id, product_id, slug, name, price_sats_override, created_at, updated_at) VALUES ('pol', 'p', 'd', 'D', 900, 0, 0)`,
    ).run()
    runMigrations(db, MIGRATIONS, { upTo: 2 })
    expect(db.prepare('SELECT price_currency, price_value FROM products').get()).toEqual({
      price_currency: 'SAT',
      price_value: 4200,
    })
    // Existing policies keep their behaviour: their override carries over, they stay non-recurring
    // and outside any tier ladder.
    runMigrations(db)
    expect(
      db
        .prepare(
          'SELECT price_value_override, price_currency_override, tier_rank, is_recurring, trial_days, public FROM policies',
        )
        .get(),
    ).toEqual({
      price_value_override: 900,
      price_currency_override: null,
      tier_rank: null,
      is_recurring: 0,
      trial_days: 0,
      public: 1,
    })
    expect(checkDatabase(db)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    db.close()
  })

  it('enforces the subscription and tier-change checks', () => {
    const db = openLicensingDb(tmpFile())
    db.exec(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p', 's', 'n', 0, 0);
             INSERT INTO policies (id, product_id, slug, name, created_at, updated_at) VALUES ('a', 'p', 'a', 'A', 0, 0);
             INSERT INTO licenses (id, product_id, source, license_key, issued_at, updated_at) VALUES ('l', 'p', 'complimentary', 'k', 0, 0)`)
    const sub = db.prepare(
      `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days, next_renewal_at, created_at, updated_at)
       VALUES (?, 'l', 'a', ?, 'SAT', 100, 30, 0, 0, 0)`,
    )
    expect(() => sub.run('s1', 'paused')).toThrow(/CHECK/)
    sub.run('s1', 'active')
    expect(() => sub.run('s2', 'active')).toThrow(/UNIQUE/)
    db.exec(
      `INSERT INTO invoices (id, product_id, amount_sats, created_at, updated_at) VALUES ('i1', 'p', 1, 0, 0), ('i2', 'p', 1, 0, 0)`,
    )
    const link = db.prepare(
      `INSERT INTO subscription_invoices (subscription_id, invoice_id, cycle_number, created_at) VALUES ('s1', ?, ?, 0)`,
    )
    link.run('i1', 1)
    expect(() => link.run('i2', 1)).toThrow(/UNIQUE/)
    const tc = db.prepare(
      `INSERT INTO tier_changes (id, license_id, from_policy_id, to_policy_id, direction, listed_currency, proration_charge_value, effective_at, actor, created_at)
       VALUES (?, 'l', 'a', 'a', ?, 'SAT', ?, 0, ?, 0)`,
    )
    expect(() => tc.run('t1', 'sideways', 0, 'admin')).toThrow(/CHECK/)
    expect(() => tc.run('t1', 'upgrade', -1, 'admin')).toThrow(/CHECK/)
    expect(() => tc.run('t1', 'upgrade', 0, 'robot')).toThrow(/CHECK/)
    tc.run('t1', 'upgrade', 0, 'admin')
    expect(() =>
      db
        .prepare(
          `INSERT INTO provider_b_config (id, base_url, api_key, connected_at, updated_at) VALUES (2, 'u', 'k', 0, 0)`,
        )
        .run(),
    ).toThrow(/CHECK/)
    db.close()
  })

  it('a failing migration leaves the database at the previous level, and a rebuild that breaks foreign keys is rolled back', () => {
    const db = openLicensingDb(tmpFile())
    const failing = {
      id: 900,
      name: 'half_done',
      up(d: typeof db) {
        d.exec('CREATE TABLE half (x INTEGER)')
        throw new Error('boom')
      },
    }
    expect(() => runMigrations(db, [...MIGRATIONS, failing])).toThrow(/boom/)
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'half'").get()).toEqual({ n: 0 })
    expect(appliedMigrations(db)).not.toContain(900)
    db.exec(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p', 's', 'n', 0, 0);
             INSERT INTO policies (id, product_id, slug, name, created_at, updated_at) VALUES ('a', 'p', 'a', 'A', 0, 0)`)
    const breaking = {
      id: 901,
      name: 'orphaning_rebuild',
      rebuild: true,
      up(d: typeof db) {
        // With foreign keys off nothing stops this; the runner's foreign_key_check must.
        d.exec(`DELETE FROM products`)
      },
    }
    expect(() => runMigrations(db, [...MIGRATIONS, breaking])).toThrow(/foreign key violation/)
    expect(db.prepare('SELECT count(*) AS n FROM products').get()).toEqual({ n: 1 })
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
    expect(checkDatabase(db)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    db.close()
  })

  it('level 11 keeps every subscription, records its original due date and moves a failing one to its retry time', () => {
    const file = tmpFile()
    const db = openLicensingDb(file, { upTo: m011SubscriptionDueDate.id - 1 })
    const day = 86_400_000
    const t = 1_700_000_000_000
    db.exec(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p', 's', 'n', 0, 0);
             INSERT INTO policies (id, product_id, slug, name, created_at, updated_at) VALUES ('a', 'p', 'a', 'A', 0, 0)`)
    const license = db.prepare(
      `INSERT INTO licenses (id, product_id, source, license_key, issued_at, updated_at, expires_at)
       VALUES (?, 'p', 'purchase', ?, 0, 0, ?)`,
    )
    const sub = db.prepare(
      `INSERT INTO subscriptions (id, license_id, policy_id, status, listed_currency, listed_value, period_days,
         next_renewal_at, last_renewal_attempt_at, consecutive_failures, created_at, updated_at)
       VALUES (?, ?, 'a', ?, 'SAT', 100, 30, ?, ?, ?, 0, 0)`,
    )
    // Active and not yet due; past due with the next cycle claimed (next_renewal_at one period on);
    // failing twice (the old code left next_renewal_at at the due date and waited on the attempt time).
    license.run('l1', 'k1', t)
    sub.run('s1', 'l1', 'active', t, null, 0)
    license.run('l2', 'k2', t)
    sub.run('s2', 'l2', 'past_due', t + 30 * day, t, 0)
    license.run('l3', 'k3', t)
    sub.run('s3', 'l3', 'past_due', t, t + 60_000, 2)
    db.close()

    const migrated = openLicensingDb(file)
    expect(appliedMigrations(migrated)).toContain(m011SubscriptionDueDate.id)
    const rows = migrated
      .prepare('SELECT id, status, next_renewal_at, due_at, consecutive_failures FROM subscriptions ORDER BY id')
      .all()
    expect(rows).toEqual([
      { id: 's1', status: 'active', next_renewal_at: t, due_at: t, consecutive_failures: 0 },
      { id: 's2', status: 'past_due', next_renewal_at: t + 30 * day, due_at: t, consecutive_failures: 0 },
      { id: 's3', status: 'past_due', next_renewal_at: t + 60_000 + 30 * 60_000, due_at: t, consecutive_failures: 2 },
    ])
    // A row written without a due date (an older writer) takes its next_renewal_at.
    migrated.exec(`INSERT INTO licenses (id, product_id, source, license_key, issued_at, updated_at) VALUES ('l4', 'p', 'purchase', 'k4', 0, 0);
       INSERT INTO subscriptions (id, license_id, policy_id, listed_currency, listed_value, period_days, next_renewal_at, created_at, updated_at)
       VALUES ('s4', 'l4', 'a', 'SAT', 100, 30, 1234, 0, 0)`)
    expect(migrated.prepare("SELECT due_at FROM subscriptions WHERE id = 's4'").get()).toEqual({ due_at: 1234 })
    expect(checkDatabase(migrated)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    migrated.close()
  })

  it('level 12 keeps every invoice flag and accepts paid_late and amount_unverified, nothing else', () => {
    const file = tmpFile()
    const db = openLicensingDb(file, { upTo: m012PaymentFlags.id - 1 })
    db.exec(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p', 's', 'n', 0, 0);
             INSERT INTO invoices (id, product_id, amount_sats, status, created_at, updated_at, payment_flag,
               payment_flag_detail, flagged_at)
             VALUES ('i1', 'p', 10, 'pending', 0, 0, 'underpaid', 'paid 1, expected 10', 5),
                    ('i2', 'p', 10, 'pending', 0, 0, NULL, NULL, NULL)`)
    expect(() => db.exec("UPDATE invoices SET payment_flag = 'paid_late' WHERE id = 'i2'")).toThrow(/CHECK/)
    db.close()

    const migrated = openLicensingDb(file)
    expect(appliedMigrations(migrated)).toContain(m012PaymentFlags.id)
    const flags = () => migrated.prepare('SELECT id, payment_flag, payment_flag_detail FROM invoices ORDER BY id').all()
    expect(flags()).toEqual([
      { id: 'i1', payment_flag: 'underpaid', payment_flag_detail: 'paid 1, expected 10' },
      { id: 'i2', payment_flag: null, payment_flag_detail: null },
    ])
    migrated.exec("UPDATE invoices SET payment_flag = 'paid_late' WHERE id = 'i2'")
    migrated.exec("UPDATE invoices SET payment_flag = 'amount_unverified' WHERE id = 'i1'")
    expect(() => migrated.exec("UPDATE invoices SET payment_flag = 'late' WHERE id = 'i1'")).toThrow(/CHECK/)
    const plan = migrated
      .prepare('EXPLAIN QUERY PLAN SELECT id FROM invoices WHERE payment_flag IS NOT NULL ORDER BY flagged_at')
      .all() as { detail: string }[]
    expect(plan.some((p) => p.detail.includes('invoices_flagged'))).toBe(true)
    m012PaymentFlags.up(migrated) // already widened: a no-op
    expect(checkDatabase(migrated)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    migrated.close()
  })

  it('level 16 keeps every invoice kind, takes top_up and its order, and still refuses an unknown kind', () => {
    const file = tmpFile()
    const db = openLicensingDb(file, { upTo: m016TopUpInvoices.id - 1 })
    db.exec(`INSERT INTO products (id, slug, name, created_at, updated_at) VALUES ('p', 's', 'n', 0, 0);
             INSERT INTO invoices (id, kind, product_id, amount_sats, created_at, updated_at)
             VALUES ('i1', 'purchase', 'p', 10, 0, 0), ('i2', 'upgrade', 'p', 10, 0, 0), ('i3', 'renewal', 'p', 10, 0, 0);
             INSERT INTO licenses (id, product_id, invoice_id, source, license_key, issued_at, updated_at)
             VALUES ('l1', 'p', 'i1', 'purchase', 'K', 0, 0)`)
    db.close()

    const migrated = openLicensingDb(file)
    expect(appliedMigrations(migrated)).toContain(m016TopUpInvoices.id)
    const kinds = () => migrated.prepare('SELECT id, kind FROM invoices ORDER BY id').all()
    expect(kinds()).toEqual([
      { id: 'i1', kind: 'purchase' },
      { id: 'i2', kind: 'upgrade' },
      { id: 'i3', kind: 'renewal' },
    ])
    migrated.exec(`INSERT INTO invoices (id, kind, product_id, amount_sats, created_at, updated_at)
                   VALUES ('i4', 'top_up', 'p', 10, 0, 0);
                   INSERT INTO access_top_up_orders (invoice_id, license_id, tokens, created_at) VALUES ('i4', 'l1', 5, 0);
                   INSERT INTO invoices (id, product_id, amount_sats, created_at, updated_at) VALUES ('i5', 'p', 1, 0, 0)`)
    expect(migrated.prepare("SELECT kind FROM invoices WHERE id = 'i5'").get()).toEqual({ kind: 'purchase' })
    expect(() => migrated.exec("UPDATE invoices SET kind = 'gift' WHERE id = 'i1'")).toThrow(/CHECK/)
    m016TopUpInvoices.up(migrated) // already widened: a no-op
    expect(kinds()).toHaveLength(5)
    expect(checkDatabase(migrated)).toEqual({ foreignKeyViolations: 0, integrity: 'ok' })
    migrated.close()
  })
})
