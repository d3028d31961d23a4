import { afterEach, describe, expect, it } from 'vitest'
import { PolicyInput, ProductInput } from '../../../src-main/contract/licensing'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { hashFingerprint } from '../../../src-main/licensing/keys/keyFormat'
import { createLicenses } from '../../../src-main/licensing/licenses'
import { keyHash, ValidationLog } from '../../../src-main/licensing/validationLog'
import { DAY, licensingFixture } from './fixture'

const open: ValidationLog[] = []
afterEach(() => {
  for (const l of open.splice(0)) l.close()
})

function setup(opts: { retentionDays?: number; maxRows?: number; batchSize?: number; maxPending?: number } = {}) {
  const f = licensingFixture()
  const sink = new MemorySink()
  const log = new ValidationLog({
    db: f.db,
    clock: f.clock,
    logger: createLogger({ sink }),
    retentionDays: opts.retentionDays ?? 90,
    maxRows: opts.maxRows ?? 1_000_000,
    batchSize: opts.batchSize,
    maxPending: opts.maxPending,
    pruneChunk: 7,
  })
  open.push(log)
  const licenses = createLicenses({ ...f, validations: log })
  const p = f.catalog.createProduct(ProductInput.parse({ slug: 'app', name: 'App', price_value: 1000 }))
  const pol = f.catalog.createPolicy(p.id, PolicyInput.parse({ slug: 'team', name: 'Team', max_machines: 3 }))
  const product = f.catalog.productRow(p.id)!
  const policy = f.catalog.policyRow(pol.id)!
  const issue = () => licenses.issuing.issue({ product, policy, source: 'complimentary' })
  return { f, log, sink, licenses, issue }
}

const caller = { ip: '127.0.0.7', userAgent: 'keysat-ts/0.4 (linux)' }
const fpHex = (fp: string) => hashFingerprint(fp).toString('hex')

describe('validation log', () => {
  it('records every validate with the license, result, fingerprint hash, address and user agent', () => {
    const { f, log, licenses, issue } = setup()
    const { license, key } = issue()
    licenses.validation.validate({ key, fingerprint: 'machine-1' }, caller)
    licenses.validation.validate({ key: 'LIC1-garbage' }, caller)
    licenses.status.suspend(license.id, 'chargeback')
    licenses.validation.validate({ key }, { ip: '127.0.0.8' })
    // Nothing is written on the request path: the calls wait for a batch.
    expect(log.pending()).toBe(3)
    expect(log.flush()).toBe(3)
    expect(log.pending()).toBe(0)
    // The batch committed without an fsync; every other commit keeps synchronous=FULL (2).
    expect(f.db.pragma('synchronous', { simple: true })).toBe(2)
    const rows = log.list({ limit: 10 })
    expect(rows.map((r) => [r.kind, r.ok, r.result])).toEqual([
      ['validate', false, 'suspended'],
      ['validate', false, 'bad_format'],
      ['validate', true, 'ok'],
    ])
    expect(rows[2]).toMatchObject({
      license_id: license.id,
      key_hash: null,
      fingerprint_hash: fpHex('machine-1'),
      client_ip: '127.0.0.7',
      user_agent: 'keysat-ts/0.4 (linux)',
    })
    // An unknown key is named by a hash of it, never by the key itself.
    expect(rows[1]).toMatchObject({
      license_id: null,
      key_hash: keyHash('LIC1-garbage'),
      user_agent: 'keysat-ts/0.4 (linux)',
    })
    expect(rows[0]).toMatchObject({ license_id: license.id, client_ip: '127.0.0.8', user_agent: null })
    expect(log.list({ limit: 10, license_id: license.id })).toHaveLength(2)
    expect(log.list({ limit: 10, ok: true })).toHaveLength(1)
  })

  it('records activate, heartbeat and deactivate, and refused keys before their 401', () => {
    const { log, licenses, issue } = setup()
    const { license, key } = issue()
    expect(licenses.machines.activate({ key, fingerprint: 'm1' }, caller)).toMatchObject({ ok: true })
    expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' }, caller)).toMatchObject({ ok: true })
    expect(licenses.machines.heartbeat({ key, fingerprint: 'm9' }, caller)).toEqual({
      ok: false,
      reason: 'not_activated',
    })
    expect(licenses.machines.deactivate({ key, fingerprint: 'm1' }, caller)).toMatchObject({ ok: true })
    expect(() => licenses.machines.heartbeat({ key: 'LIC1-nope', fingerprint: 'm1' }, caller)).toThrow(
      /invalid license key/,
    )
    log.flush()
    const rows = log.list({ limit: 10 }).reverse()
    expect(rows.map((r) => [r.kind, r.license_id, r.result, r.fingerprint_hash])).toEqual([
      ['activate', license.id, 'ok', fpHex('m1')],
      ['heartbeat', license.id, 'ok', fpHex('m1')],
      ['heartbeat', license.id, 'not_activated', fpHex('m9')],
      ['deactivate', license.id, 'ok', fpHex('m1')],
      ['heartbeat', null, 'bad_format', fpHex('m1')],
    ])
    expect(rows[4]!.key_hash).toBe(keyHash('LIC1-nope'))
  })

  it('limits heartbeats to 60 a minute per license', () => {
    const { f, log, licenses, issue } = setup()
    const { key } = issue()
    const other = issue()
    licenses.machines.activate({ key, fingerprint: 'm1' })
    licenses.machines.activate({ key: other.key, fingerprint: 'm1' })
    for (let i = 0; i < 60; i++) expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' }).ok).toBe(true)
    expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' })).toEqual({ ok: false, reason: 'rate_limited' })
    // Per license: another license is not affected.
    expect(licenses.machines.heartbeat({ key: other.key, fingerprint: 'm1' }).ok).toBe(true)
    f.clock.advance(1_000)
    expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' }).ok).toBe(true)
    expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' })).toEqual({ ok: false, reason: 'rate_limited' })
    f.clock.advance(60_000)
    for (let i = 0; i < 60; i++) expect(licenses.machines.heartbeat({ key, fingerprint: 'm1' }).ok).toBe(true)
    log.flush()
    expect(log.list({ limit: 1000, kind: 'heartbeat', ok: false }).map((r) => r.result)).toEqual([
      'rate_limited',
      'rate_limited',
    ])
  })

  it('writes a full batch by itself, off the calling path', async () => {
    const { log, licenses, issue } = setup({ batchSize: 5 })
    const { key } = issue()
    for (let i = 0; i < 5; i++) licenses.validation.validate({ key })
    expect(log.pending()).toBe(5)
    await new Promise((r) => setImmediate(r))
    expect(log.pending()).toBe(0)
    expect(log.list({ limit: 10 })).toHaveLength(5)
  })

  it('drops calls beyond its buffer rather than grow without bound, and says so', () => {
    const { log, sink, licenses, issue } = setup({ maxPending: 3, batchSize: 100 })
    const { key } = issue()
    for (let i = 0; i < 5; i++) licenses.validation.validate({ key })
    expect(log.pending()).toBe(3)
    log.flush()
    expect(sink.lines.some((l) => /fell behind/.test(l) && /"dropped":2/.test(l))).toBe(true)
  })

  it('keeps rows by age and by count', () => {
    const { f, log, licenses, issue } = setup({ retentionDays: 2, maxRows: 20 })
    const { key } = issue()
    for (let i = 0; i < 10; i++) licenses.validation.validate({ key })
    log.flush()
    f.clock.advance(DAY)
    for (let i = 0; i < 15; i++) licenses.validation.validate({ key })
    log.flush()
    // 25 rows, cap 20: the 5 oldest go (in steps of 7).
    expect(log.prune()).toBe(5)
    expect(log.list({ limit: 100 })).toHaveLength(20)
    // Two days after the first batch, what is left of it is older than the retention.
    f.clock.advance(DAY + 1)
    expect(log.prune()).toBe(5)
    const left = log.list({ limit: 100 })
    expect(left).toHaveLength(15)
    expect(Math.min(...left.map((r) => r.at))).toBe(f.clock.now() - DAY - 1)
    // The per-day counts outlive the rows.
    expect(log.daily(7).rows.reduce((n, r) => n + r.count, 0)).toBe(25)
  })

  it('counts calls per day by kind and result', () => {
    const { f, log, licenses, issue } = setup()
    const { key } = issue()
    licenses.validation.validate({ key })
    licenses.validation.validate({ key: 'LIC1-x' })
    f.clock.advance(DAY)
    licenses.validation.validate({ key })
    licenses.validation.validate({ key })
    licenses.machines.activate({ key, fingerprint: 'a' })
    const d = log.daily(7)
    expect(d.to_day).toBe('2026-01-16')
    expect(d.from_day).toBe('2026-01-10')
    expect(d.rows).toEqual([
      { day: '2026-01-15', kind: 'validate', result: 'bad_format', count: 1 },
      { day: '2026-01-15', kind: 'validate', result: 'ok', count: 1 },
      { day: '2026-01-16', kind: 'activate', result: 'ok', count: 1 },
      { day: '2026-01-16', kind: 'validate', result: 'ok', count: 2 },
    ])
  })
})
