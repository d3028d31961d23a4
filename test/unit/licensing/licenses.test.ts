import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { PolicyInput, ProductInput, DiscountInput, ValidateInput } from '../../../src-main/contract/licensing'
import { FLAG_FINGERPRINT_BOUND, hashFingerprint } from '../../../src-main/licensing/keys/keyFormat'
import { Issuer } from '../../../src-main/licensing/keys/issuer'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { DAY, licensingFixture } from './fixture'

function setup(policy: Partial<PolicyInput> = {}) {
  const f = licensingFixture()
  const p = f.catalog.createProduct(ProductInput.parse({ slug: 'app', name: 'App', price_value: 1000 }))
  const pol = f.catalog.createPolicy(
    p.id,
    PolicyInput.parse({ slug: 'tier', name: 'Tier', entitlements: ['pro'], ...policy }),
  )
  const product = f.catalog.productRow(p.id)!
  const policyRow = f.catalog.policyRow(pol.id)!
  const issue = () => f.licenses.issuing.issue({ product, policy: policyRow, source: 'complimentary' })
  const validate = (key: string, extra: { product_slug?: string; fingerprint?: string } = {}) =>
    f.licenses.validation.validate({ key, product_slug: extra.product_slug, fingerprint: extra.fingerprint })
  return { f, product, policyRow, issue, validate }
}

describe('validate', () => {
  it('accepts an issued key with the current database state, not the key’s', () => {
    const { f, issue, validate, policyRow } = setup()
    const { license, key } = issue()
    expect(validate(key)).toMatchObject({
      ok: true,
      license_id: license.id,
      product_slug: 'app',
      entitlements: ['pro'],
      status: 'active',
      max_machines: 1,
    })
    // The operator changes the license's entitlements: validation reports them though the key still says ['pro'].
    f.db.prepare(`UPDATE licenses SET entitlements = '["pro","ai"]' WHERE id = ?`).run(license.id)
    expect(validate(key)).toMatchObject({ ok: true, entitlements: ['pro', 'ai'] })
    expect(f.issuer.verify(key)).toMatchObject({ ok: true, payload: { entitlements: ['pro'] } })
    expect(policyRow.slug).toBe('tier')
  })

  it('answers each failure with its reason', () => {
    const { f, issue, validate } = setup()
    const { license, key } = issue()
    // Wrong types never reach the service: the contract refuses them (answered 200 bad_format over HTTP).
    expect(ValidateInput.safeParse({ key: 42 }).success).toBe(false)
    expect(ValidateInput.safeParse({ key: 'LIC1-x', fingerprint: 12 }).success).toBe(false)
    expect(validate('LIC1-garbage')).toEqual({ ok: false, reason: 'bad_format' })
    const [pre, payload, sig] = key.split('-') as [string, string, string]
    const tampered = `${pre}-${payload.slice(0, 40)}${payload[40] === 'A' ? 'B' : 'A'}${payload.slice(41)}-${sig}`
    expect(validate(tampered)).toEqual({ ok: false, reason: 'bad_signature' })
    // Signed by this issuer but for a license the database does not have.
    const parsed = f.issuer.verify(key)
    if (!parsed.ok) throw new Error('setup')
    const ghost = f.issuer.sign({ ...parsed.payload, licenseId: '00000000-0000-4000-8000-000000000000' })
    expect(validate(ghost)).toEqual({ ok: false, reason: 'not_found' })
    expect(validate(key, { product_slug: 'other' })).toMatchObject({ ok: false, reason: 'product_mismatch' })
    f.licenses.status.suspend(license.id, 'chargeback')
    expect(validate(key)).toMatchObject({ ok: false, reason: 'suspended' })
    f.licenses.status.reinstate(license.id)
    expect(validate(key)).toMatchObject({ ok: true })
    f.licenses.status.revoke(license.id, 'refund')
    expect(validate(key)).toMatchObject({ ok: false, reason: 'revoked' })
    expect(() => f.licenses.status.reinstate(license.id)).toThrow(/stays revoked/)
  })

  it('honours the grace window after expiry', () => {
    const { f, issue, validate } = setup({ duration_days: 30, grace_period_days: 7 })
    const { key, license } = issue()
    expect(license.expires_at).toBe(f.clock.now() + 30 * DAY)
    f.clock.advance(30 * DAY)
    expect(validate(key)).toMatchObject({
      ok: true,
      in_grace_period: true,
      grace_until: new Date(license.expires_at! + 7 * DAY).toISOString(),
    })
    f.clock.advance(7 * DAY - 1)
    expect(validate(key)).toMatchObject({ ok: true, in_grace_period: true })
    f.clock.advance(1)
    expect(validate(key)).toMatchObject({
      ok: false,
      reason: 'expired',
      expires_at: new Date(license.expires_at!).toISOString(),
    })
  })

  it('binds a single-seat license to the first fingerprint (trust on first use) and stores only its hash', () => {
    const { f, issue, validate } = setup()
    const { key, license } = issue()
    const first = validate(key, { fingerprint: 'machine-A' })
    expect(first).toMatchObject({ ok: true, machine_id: expect.any(String) })
    expect(validate(key, { fingerprint: 'machine-A' })).toMatchObject({ ok: true, machine_id: first.machine_id })
    expect(validate(key, { fingerprint: 'machine-B' })).toMatchObject({ ok: false, reason: 'fingerprint_mismatch' })
    const row = f.db.prepare('SELECT fingerprint_hash FROM machines WHERE license_id = ?').get(license.id) as {
      fingerprint_hash: string
    }
    expect(row.fingerprint_hash).toBe(hashFingerprint('machine-A').toString('hex'))
    const dump =
      fs.readFileSync(`${f.dir}/licensing.sqlite`).toString('latin1') +
      fs.readFileSync(`${f.dir}/licensing.sqlite-wal`).toString('latin1')
    expect(dump.includes('machine-A')).toBe(false)
    // Freeing the seat lets another machine bind.
    expect(f.licenses.machines.deactivate({ key, fingerprint: 'machine-A' })).toMatchObject({ ok: true })
    expect(validate(key, { fingerprint: 'machine-B' })).toMatchObject({ ok: true })
  })

  it('refuses a fingerprint-bound key on another machine', () => {
    const { f, issue, validate } = setup({ max_machines: 3 })
    const { license } = issue()
    const bound = f.issuer.sign({
      version: 2,
      flags: FLAG_FINGERPRINT_BOUND,
      productId: license.product_id,
      licenseId: license.id,
      issuedAt: 1,
      expiresAt: 0,
      fingerprintHash: hashFingerprint('only-here'),
      entitlements: [],
    })
    expect(validate(bound, { fingerprint: 'elsewhere' })).toMatchObject({ ok: false, reason: 'fingerprint_mismatch' })
    expect(validate(bound, { fingerprint: 'only-here' })).toMatchObject({ ok: true })
  })
})

describe('machines', () => {
  it('activates up to the limit, then too_many_machines; deactivate frees a seat; heartbeat needs activation', () => {
    const { f, issue, validate } = setup({ max_machines: 2 })
    const { key } = issue()
    expect(
      f.licenses.machines.activate({ key, fingerprint: 'm1', hostname: 'box1', platform: 'linux-x86_64' }),
    ).toMatchObject({
      ok: true,
      active_count: 1,
      max_machines: 2,
    })
    expect(f.licenses.machines.activate({ key, fingerprint: 'm1' })).toMatchObject({ ok: true, active_count: 1 })
    expect(f.licenses.machines.activate({ key, fingerprint: 'm2' })).toMatchObject({ ok: true, active_count: 2 })
    expect(f.licenses.machines.activate({ key, fingerprint: 'm3' })).toMatchObject({
      ok: false,
      reason: 'too_many_machines',
      active_count: 2,
      max_machines: 2,
    })
    expect(validate(key, { fingerprint: 'm3' })).toMatchObject({
      ok: false,
      reason: 'too_many_machines',
      max_machines: 2,
    })
    expect(f.licenses.machines.heartbeat({ key, fingerprint: 'm3' })).toEqual({ ok: false, reason: 'not_activated' })
    f.clock.advance(60_000)
    const hb = f.licenses.machines.heartbeat({ key, fingerprint: 'm2' })
    expect(hb.ok).toBe(true)
    const m2 = f.licenses.lookup.machines({ limit: 10 }).find((m) => m.id === hb.machine_id)!
    expect(m2.last_heartbeat_at).toBe(f.clock.now())
    expect(f.licenses.machines.deactivate({ key, fingerprint: 'm1', reason: 'new laptop' })).toMatchObject({
      ok: true,
      active_count: 1,
    })
    expect(f.licenses.machines.activate({ key, fingerprint: 'm3' })).toMatchObject({ ok: true, active_count: 2 })
    const all = f.licenses.lookup.machines({ include_inactive: true, limit: 10 })
    expect(all.find((m) => m.status === 'inactive')).toMatchObject({ deactivation_reason: 'new laptop' })
    // Admin kicks a machine off.
    const victim = f.licenses.lookup.machines({ limit: 10 })[0]!
    expect(f.licenses.machines.deactivateMachine(victim.id, 'abuse')).toMatchObject({
      status: 'inactive',
      deactivation_reason: 'abuse',
    })
    expect(() => f.licenses.machines.deactivateMachine(victim.id, 'again')).toThrow(/already inactive/)
  })

  it('validate refreshes a seat at most once a minute; the heartbeat endpoint always does', () => {
    const { f, issue, validate } = setup({ max_machines: 2 })
    const { key } = issue()
    const first = validate(key, { fingerprint: 'fp' })
    const seen = () =>
      f.licenses.lookup.machines({ limit: 5 }).find((m) => m.id === first.machine_id)!.last_heartbeat_at
    const t0 = seen()
    f.clock.advance(30_000)
    expect(validate(key, { fingerprint: 'fp' })).toMatchObject({ ok: true, machine_id: first.machine_id })
    expect(seen()).toBe(t0)
    f.clock.advance(30_000)
    validate(key, { fingerprint: 'fp' })
    expect(seen()).toBe(t0 + 60_000)
    f.clock.advance(1_000)
    f.licenses.machines.heartbeat({ key, fingerprint: 'fp' })
    expect(seen()).toBe(t0 + 61_000)
  })

  it('max_machines 0 is unlimited', () => {
    const { f, issue } = setup({ max_machines: 0 })
    const { key } = issue()
    for (let i = 0; i < 25; i++) expect(f.licenses.machines.activate({ key, fingerprint: `m${i}` }).ok).toBe(true)
  })

  it('key-authenticated calls reject garbage, tampered and foreign keys with the same 401', () => {
    const { f, issue } = setup()
    const { key } = issue()
    const foreign = Issuer.loadOrCreate(`${f.dir}/other-keys`, createLogger({ sink: new MemorySink() }))
    const p = f.issuer.verify(key)
    if (!p.ok) throw new Error('setup')
    // A character inside the signature, changed: the last one carries padding bits a decoder may ignore.
    const at = key.length - 10
    const tampered = key.slice(0, at) + (key[at] === 'A' ? 'B' : 'A') + key.slice(at + 1)
    const keys = ['garbage', tampered, foreign.sign(p.payload)]
    for (const k of keys) {
      for (const call of [
        () => f.licenses.machines.activate({ key: k, fingerprint: 'x' }),
        () => f.licenses.machines.heartbeat({ key: k, fingerprint: 'x' }),
        () => f.licenses.machines.deactivate({ key: k, fingerprint: 'x' }),
        () => f.licenses.recovery.recover(k),
      ]) {
        expect(call).toThrow(
          expect.objectContaining({ code: 'unauthorized', status: 401, message: 'invalid license key' }),
        )
      }
    }
  })
})

describe('recover', () => {
  it('returns the current state and a freshly signed key with current entitlements', () => {
    const { f, issue } = setup({ duration_days: 365 })
    const { key, license } = issue()
    f.db.prepare(`UPDATE licenses SET entitlements = '["pro","team"]' WHERE id = ?`).run(license.id)
    const r = f.licenses.recovery.recover(key)
    expect(r).toMatchObject({
      ok: true,
      license_id: license.id,
      status: 'active',
      entitlements: ['pro', 'team'],
      product_slug: 'app',
      policy_slug: 'tier',
    })
    const fresh = f.issuer.verify(r.license_key!)
    expect(fresh).toMatchObject({
      ok: true,
      payload: {
        version: 2,
        entitlements: ['pro', 'team'],
        licenseId: license.id,
        expiresAt: Math.floor(license.expires_at! / 1000),
      },
    })
    f.licenses.status.revoke(license.id)
    expect(f.licenses.recovery.recover(key)).toMatchObject({ status: 'revoked', license_key: null })
  })
})

describe('redeem', () => {
  it('issues one license per free_license code use, up to the cap, with a settled zero invoice', () => {
    const { f } = setup()
    f.discounts.create(DiscountInput.parse({ code: 'FREE2', kind: 'free_license', max_redemptions: 2 }))
    f.discounts.create(DiscountInput.parse({ code: 'HALF', kind: 'percent', value: 50 }))
    const a = f.licenses.redemption.redeem({ product: 'app', code: 'free2', buyerEmail: 'a@example.com' })
    expect(f.issuer.verify(a.license_key)).toMatchObject({ ok: true })
    const inv = f.db.prepare('SELECT * FROM invoices WHERE id = ?').get(a.invoice_id) as Record<string, unknown>
    expect(inv).toMatchObject({
      status: 'settled',
      amount_sats: 0,
      kind: 'redeem',
      provider: 'free',
      issued_license_id: a.license_id,
    })
    f.licenses.redemption.redeem({ product: 'app', code: 'FREE2', policy: 'tier' })
    expect(() => f.licenses.redemption.redeem({ product: 'app', code: 'FREE2' })).toThrow(
      expect.objectContaining({ code: 'discount_exhausted' }),
    )
    expect(() => f.licenses.redemption.redeem({ product: 'app', code: 'HALF' })).toThrow(
      expect.objectContaining({ code: 'discount_wrong_kind' }),
    )
    expect(f.discounts.view(f.discounts.byCode('FREE2')!)).toMatchObject({ redemption_count: 2 })
    expect((f.db.prepare(`SELECT count(*) AS n FROM licenses WHERE source = 'redeem'`).get() as { n: number }).n).toBe(
      2,
    )
  })

  it('a second license for the same invoice is refused by the unique constraint', () => {
    const { f, product, policyRow } = setup()
    f.db
      .prepare(`INSERT INTO invoices (id, product_id, amount_sats, created_at, updated_at) VALUES ('inv', ?, 1, 0, 0)`)
      .run(product.id)
    f.licenses.issuing.issue({ product, policy: policyRow, source: 'purchase', invoiceId: 'inv' })
    expect(() =>
      f.licenses.issuing.issue({ product, policy: policyRow, source: 'purchase', invoiceId: 'inv' }),
    ).toThrow(/UNIQUE/)
  })
})

describe('admin search and analytics', () => {
  it('searches by email and status, and reports issued licenses and active machines by day', () => {
    const { f, issue } = setup()
    const a = f.licenses.issuing.issueComplimentary({
      productId: f.catalog.productBySlug('app')!.id,
      buyerEmail: 'alice@example.com',
    })
    issue()
    f.clock.advance(DAY)
    const c = issue()
    f.licenses.machines.activate({ key: c.key, fingerprint: 'x' })
    f.licenses.status.revoke(a.license.id)
    expect(f.licenses.lookup.search({ q: 'alice', limit: 10, offset: 0 })).toMatchObject({
      total: 1,
      licenses: [{ buyer_email: 'alice@example.com', status: 'revoked' }],
    })
    expect(f.licenses.lookup.search({ status: 'active', limit: 10, offset: 0 }).total).toBe(2)
    expect(f.licenses.lookup.search({ q: '%', limit: 10, offset: 0 }).total).toBe(0)
    const r = f.analytics.report(7)
    expect(r.licenses_issued).toEqual([
      { day: '2026-01-15', product_id: expect.any(String), product_slug: 'app', count: 2 },
      { day: '2026-01-16', product_id: expect.any(String), product_slug: 'app', count: 1 },
    ])
    expect(r).toMatchObject({ from_day: '2026-01-10', to_day: '2026-01-16', active_machines: 1, active_licenses: 2 })
    expect(f.audit.list({ limit: 50, action: 'license.revoke' })).toHaveLength(1)
    // Revenue per day per product and currency from settled invoices (SAT listings count in sats).
    const pid = f.catalog.productBySlug('app')!.id
    const ins = f.db.prepare(
      `INSERT INTO invoices (id, product_id, amount_sats, status, listed_currency, listed_value, created_at, updated_at, settled_at)
       VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?)`,
    )
    const now = f.clock.now()
    ins.run('i1', pid, 1000, 'settled', null, null, now)
    ins.run('i2', pid, 2000, 'settled', null, null, now - 1000)
    ins.run('i3', pid, 20556, 'settled', 'USD', 1999, now)
    ins.run('i4', pid, 5000, 'pending', null, null, now)
    ins.run('i5', pid, 7000, 'settled', null, null, now - 30 * DAY)
    const rev = f.analytics.report(7)
    expect(rev.revenue).toEqual([
      {
        day: '2026-01-16',
        product_id: pid,
        product_slug: 'app',
        currency: 'SAT',
        listed_value: 3000,
        amount_sats: 3000,
        invoices: 2,
      },
      {
        day: '2026-01-16',
        product_id: pid,
        product_slug: 'app',
        currency: 'USD',
        listed_value: 1999,
        amount_sats: 20556,
        invoices: 1,
      },
    ])
    expect(rev.totals).toEqual({ amount_sats: 23556, licenses_issued: 3, invoices_settled: 3 })
  })
})

describe('admin inputs', () => {
  it('GET flags parse from query strings (HTTP) and booleans (IPC); PATCH leaves absent fields alone', async () => {
    const { licensingAdminContract } = await import('../../../src-main/contract/licensing')
    const machines = licensingAdminContract.licAdminMachines.input
    expect(machines.parse({ include_inactive: 'true' })).toMatchObject({ include_inactive: true })
    expect(machines.parse({ include_inactive: 'false' })).toMatchObject({ include_inactive: false })
    expect(machines.parse({ include_inactive: true })).toMatchObject({ include_inactive: true })
    expect(licensingAdminContract.licAdminUpdatePolicy.input.parse({ id: 'x', name: 'N' })).toEqual({
      id: 'x',
      name: 'N',
    })
    expect(licensingAdminContract.licAdminUpdateDiscount.input.parse({ id: 'x', active: false })).toEqual({
      id: 'x',
      active: false,
    })
  })
})
