import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ConsumerKey, ConsumerKeyCreate, ConsumerKeyPatch } from '../../contract/consumerKeys'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { RateLimiter } from '../../lib/rateLimit'
import { openGatewayDb, type GatewayDb } from '../gatewayDb'
import type { ConsumerIdentity } from '../../platform/callerIdentity'
import type { LicenseStanding, QuotaKind } from '../../platform/accessKeys'
import type { KeyPeriodUsage } from '../../contract/gateway'
import { LicenseGate } from './licenseGate'
import { PeriodUsage, type PeriodCounts } from './periodUsage'

/**
 * Named consumer keys and their admission (issue 16): who a bearer key belongs to, whether it may
 * run now (requests per minute, concurrent requests) and which models it may name. Keys live in
 * gateway.db and are held in memory, so a request costs one map lookup and one SHA-256.
 *
 * A secret is `tdm_<prefix>_<43 base64url characters>`: the prefix finds the row, and only the
 * secret's SHA-256 is stored.
 */
export type { ConsumerIdentity }

/** The labels of the callers that are not a named key: one string each, not one built per request. */
const KIND_LABELS = { legacy: '(legacy)', admin: '(admin)', open: '(open)' } as const

/** The label a request is counted under (request log, metrics). */
export function identityLabel(who: ConsumerIdentity | undefined): string | null {
  if (!who) return null
  return who.kind === 'key' ? who.name : KIND_LABELS[who.kind]
}

/** A placement's two names: what its engine serves and its catalog key. */
export interface PlacedNames {
  readonly served: string
  readonly key: string | null
}

/** Whether a caller is a named key restricted to a list of models. */
export function keyRestricted(who: ConsumerIdentity | undefined): boolean {
  return who?.kind === 'key' && who.models !== null
}

/**
 * 403 when a named key may not use `model`. `placed` lists the placements: a key allowed a
 * placement by one of its names may name it by the other. A request whose `model` is missing or
 * not a string goes to the route's default model: `routeDefault` names it (null: the route's
 * default has no name Tandem knows, so a restricted key may not use it); undefined when the route
 * checks the placement it picks itself (checkKeyPlacement).
 */
export function checkKeyModel(
  who: ConsumerIdentity | undefined,
  model: unknown,
  placed?: () => readonly PlacedNames[],
  routeDefault?: string | null,
): void {
  if (who?.kind !== 'key' || who.models === null) return
  if (typeof model !== 'string') {
    if (routeDefault === undefined) return
    if (routeDefault === null) throw unnamedModel(who.name)
    return checkKeyModel(who, routeDefault, placed)
  }
  const allowed = who.models
  if (allowed.includes(model)) return
  if (placed?.().some((p) => (p.served === model || p.key === model) && keyAllows(allowed, p))) return
  throw forbiddenModel(who.name, model)
}

/**
 * 403 unless a named key's models name one of `names`: a service's own model (the asr's, a tts
 * voice as /v1/models lists it) or the name the request used for it. Null names are unknown.
 */
export function checkKeyService(
  who: ConsumerIdentity | undefined,
  names: readonly (string | null)[],
  what: string,
): void {
  if (who?.kind !== 'key' || who.models === null) return
  const allowed = who.models
  if (names.some((n) => n !== null && allowed.includes(n))) return
  const shown = names.find((n) => n !== null)
  if (shown === undefined)
    throw new ApiError(
      'forbidden',
      `key '${who.name}' may use only the models it lists, and the ${what} is not known now`,
      {
        param: 'model',
      },
    )
  throw new ApiError('forbidden', `key '${who.name}' may not use the ${what} '${shown}'`, { param: 'model' })
}

/** 403 unless a named key's models name the placement a request was routed to (by served name or catalog key). */
export function checkKeyPlacement(
  who: ConsumerIdentity | undefined,
  route: PlacedNames & { readonly id: string },
): void {
  if (who?.kind !== 'key' || who.models === null || keyAllows(who.models, route)) return
  // A placement found running whose model is not known yet has no name to show but its nodes.
  if (route.served === '')
    throw new ApiError('forbidden', `key '${who.name}' may not use the placement ${route.id}`, { param: 'model' })
  throw forbiddenModel(who.name, route.served)
}

function keyAllows(allowed: readonly string[], p: PlacedNames): boolean {
  return allowed.includes(p.served) || (p.key !== null && allowed.includes(p.key))
}

function unnamedModel(keyName: string): ApiError {
  return new ApiError(
    'forbidden',
    `key '${keyName}' may use only the models it lists: name one of them as \`model\` (a string)`,
    { param: 'model' },
  )
}

function forbiddenModel(keyName: string, model: string): ApiError {
  return new ApiError('forbidden', `key '${keyName}' may not use the model '${model}'`, { param: 'model' })
}

interface KeyRow {
  id: string
  name: string
  prefix: string
  secret_sha256: string
  created_at: number
  expires_at: number | null
  disabled: number
  models: string | null
  requests_per_minute: number | null
  max_concurrent: number | null
  last_used_at: number | null
  /** The license that sold this key (issue 45); null for a key the operator made. */
  license_id: string | null
}

interface HeldKey {
  row: KeyRow
  models: string[] | null
  hash: Buffer
  rate: RateLimiter | null
  inFlight: number
  /** Where a license key's requests count: the period its last admitted request began in. */
  periodStart: number | null
  identity: ConsumerIdentity & { kind: 'key' }
}

const SECRET_RE = /^tdm_([a-f0-9]{8})_[A-Za-z0-9_-]{43}$/

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

export class ConsumerKeys {
  private readonly byPrefix = new Map<string, HeldKey>()
  private readonly byId = new Map<string, HeldKey>()
  private dirtyLastUsed = new Set<HeldKey>()
  /** The license keys' gate: standing, quota and usage per period. */
  readonly licenses: LicenseGate
  private operatorKeys = 0

  private constructor(
    private readonly db: GatewayDb | null,
    private readonly clock: Clock,
    /** Why the database is unavailable; named keys then fail closed. */
    readonly outage: string | null,
  ) {
    this.licenses = new LicenseGate(db ? new PeriodUsage(db) : null)
    if (db) for (const row of db.prepare('SELECT * FROM consumer_keys').all() as KeyRow[]) this.hold(row)
    this.countOperatorKeys()
  }

  /** Opens DATA_DIR/gateway.db; a file that cannot be opened is reported, and the consumer surface then needs a key. */
  static open(dataDir: string, clock: Clock, logger: Logger): ConsumerKeys {
    try {
      return new ConsumerKeys(
        openGatewayDb(dataDir, () => clock.now()),
        clock,
        null,
      )
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      logger.error(`named consumer keys are unavailable: ${why}; only CONSUMER_API_KEYS are accepted`)
      return new ConsumerKeys(null, clock, why)
    }
  }

  /** The database, for the usage store beside the keys (null while unavailable). */
  get database(): GatewayDb | null {
    return this.db
  }

  /** Any key the operator made exists (or the key database is unreadable: fail closed, never open). */
  get required(): boolean {
    return this.operatorKeys > 0 || this.outage !== null
  }

  /** Keys the operator made (not sold with a license): only these close the LAN to keyless clients. */
  private countOperatorKeys(): void {
    let n = 0
    for (const h of this.byId.values()) if (h.row.license_id === null) n++
    this.operatorKeys = n
  }

  get count(): number {
    return this.byPrefix.size
  }

  /** The key a bearer secret names, when it is right, enabled and not expired; null otherwise. */
  identify(secret: string): (ConsumerIdentity & { kind: 'key' }) | null {
    const m = SECRET_RE.exec(secret)
    const held = m ? this.byPrefix.get(m[1]!) : undefined
    if (!held || !timingSafeEqual(sha256(secret), held.hash)) return null
    if (held.row.disabled === 1) return null
    if (held.row.expires_at !== null && held.row.expires_at <= this.clock.now()) return null
    return held.identity
  }

  claims(secret: string): boolean {
    return secret.startsWith('tdm_')
  }

  /** Keys bound to a license ask licensing on every request whether it still stands (issue 45). */
  followLicenses(standing: LicenseStanding | null): void {
    this.licenses.follow(standing)
  }

  /** `GET /v1/usage` for the key a request came with: only a license's key has a period. */
  periodUsage(keyId: string | undefined): KeyPeriodUsage {
    const held = keyId === undefined ? undefined : this.byId.get(keyId)
    if (!held)
      throw new ApiError(
        'not_found',
        'GET /v1/usage answers the gateway key of a license (as the Bearer token); none came',
      )
    if (held.row.license_id === null)
      throw new ApiError('not_found', `key '${held.row.name}' is not bound to a license: it has no period or quota`)
    return this.licenses.usage(held.row.name, held.row.id, held.row.license_id)
  }

  /** A license key's finished request counts in the period it was admitted in. */
  countPeriod(keyId: string, model: string, counts: PeriodCounts): void {
    const held = this.byId.get(keyId)
    if (held?.periodStart == null) return
    this.licenses.periods?.add(keyId, held.periodStart, model, counts)
  }

  /**
   * Lets one request of `who` run: 403 when the license that sold the key no longer stands, 429
   * once its period's tokens (or audio seconds, as `quota` says) are spent, 429 with Retry-After
   * over its rate or its concurrency cap. Returns the release to call when the request ends.
   */
  admit(who: ConsumerIdentity & { kind: 'key' }, quota: QuotaKind | null = 'tokens'): () => void {
    const held = this.byId.get(who.id)
    if (!held) throw new ApiError('unauthorized', 'this consumer key was deleted')
    if (held.row.license_id !== null)
      held.periodStart = this.licenses.admit(held.row.name, held.row.id, held.row.license_id, quota).periodStart
    const cap = held.row.max_concurrent
    if (cap !== null && held.inFlight >= cap)
      throw new ApiError('rate_limited', `key '${held.row.name}' already has ${cap} requests running (its limit)`, {
        headers: { 'Retry-After': '1' },
      })
    if (held.rate && !held.rate.take(held.row.id)) {
      const wait = Math.max(1, held.rate.retryAfterSeconds(held.row.id))
      throw new ApiError(
        'rate_limited',
        `key '${held.row.name}' is over its limit of ${held.row.requests_per_minute} requests per minute`,
        { headers: { 'Retry-After': String(wait) } },
      )
    }
    held.inFlight++
    held.row.last_used_at = this.clock.now()
    this.dirtyLastUsed.add(held)
    let released = false
    return () => {
      if (released) return
      released = true
      held.inFlight--
    }
  }

  /** Every key, oldest first (ties by id, so pages never overlap). */
  list(): ConsumerKey[] {
    return this.ordered().map((h) => this.view(h))
  }

  /** `limit` keys from `offset`, oldest first, and how many there are. */
  page(q: { limit: number; offset: number }): { keys: ConsumerKey[]; total: number } {
    const all = this.ordered()
    return { keys: all.slice(q.offset, q.offset + q.limit).map((h) => this.view(h)), total: all.length }
  }

  /** The names of the keys among `ids` that exist, by id. */
  names(ids: readonly string[]): Record<string, string> {
    const out: Record<string, string> = {}
    for (const id of ids) {
      const held = this.byId.get(id)
      if (held) out[id] = held.row.name
    }
    return out
  }

  private ordered(): HeldKey[] {
    return [...this.byId.values()].sort(
      (a, b) => a.row.created_at - b.row.created_at || (a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0),
    )
  }

  /** A new key; `licenseId` binds it to the license that sold it (at most one key per license). */
  create(input: ConsumerKeyCreate, licenseId: string | null = null): ConsumerKey & { secret: string } {
    const db = this.writable()
    const { prefix, secret } = this.freshSecret()
    const row: KeyRow = {
      id: randomBytes(8).toString('hex'),
      name: input.name,
      prefix,
      secret_sha256: sha256(secret).toString('hex'),
      created_at: this.clock.now(),
      expires_at: input.expires_at ?? null,
      disabled: 0,
      models: input.models ? JSON.stringify([...new Set(input.models)]) : null,
      requests_per_minute: input.requests_per_minute ?? null,
      max_concurrent: input.max_concurrent ?? null,
      last_used_at: null,
      license_id: licenseId,
    }
    if (licenseId !== null && this.forLicense(licenseId))
      throw new ApiError('conflict', `license ${licenseId} already has a gateway key`)
    db.prepare(
      `INSERT INTO consumer_keys (id, name, prefix, secret_sha256, created_at, expires_at, disabled, models,
         requests_per_minute, max_concurrent, last_used_at, license_id)
       VALUES (@id, @name, @prefix, @secret_sha256, @created_at, @expires_at, @disabled, @models,
         @requests_per_minute, @max_concurrent, @last_used_at, @license_id)`,
    ).run(row)
    const held = this.hold(row)
    this.countOperatorKeys()
    return { ...this.view(held), secret }
  }

  /** The key bound to a license, if any. */
  forLicense(licenseId: string): ConsumerKey | null {
    for (const h of this.byId.values()) if (h.row.license_id === licenseId) return this.view(h)
    return null
  }

  /** The license a key is bound to, if any. */
  licenseOf(keyId: string): string | null {
    return this.byId.get(keyId)?.row.license_id ?? null
  }

  /** A new secret for a key, the old one refused from now on; its id, limits and usage stay. */
  rotate(id: string): ConsumerKey & { secret: string } {
    const db = this.writable()
    const held = this.find(id)
    const { prefix, secret } = this.freshSecret()
    const row: KeyRow = { ...held.row, prefix, secret_sha256: sha256(secret).toString('hex') }
    db.prepare('UPDATE consumer_keys SET prefix = @prefix, secret_sha256 = @secret_sha256 WHERE id = @id').run(row)
    this.byPrefix.delete(held.row.prefix)
    const next = this.hold(row, held.rate)
    next.inFlight = held.inFlight
    next.periodStart = held.periodStart
    return { ...this.view(next), secret }
  }

  private freshSecret(): { prefix: string; secret: string } {
    let prefix: string
    do prefix = randomBytes(4).toString('hex')
    while (this.byPrefix.has(prefix))
    return { prefix, secret: `tdm_${prefix}_${randomBytes(32).toString('base64url')}` }
  }

  update(id: string, patch: ConsumerKeyPatch): ConsumerKey {
    const db = this.writable()
    const held = this.find(id)
    const row: KeyRow = {
      ...held.row,
      name: patch.name ?? held.row.name,
      expires_at: patch.expires_at === undefined ? held.row.expires_at : patch.expires_at,
      disabled: patch.disabled === undefined ? held.row.disabled : patch.disabled ? 1 : 0,
      models:
        patch.models === undefined
          ? held.row.models
          : patch.models === null
            ? null
            : JSON.stringify([...new Set(patch.models)]),
      requests_per_minute:
        patch.requests_per_minute === undefined ? held.row.requests_per_minute : patch.requests_per_minute,
      max_concurrent: patch.max_concurrent === undefined ? held.row.max_concurrent : patch.max_concurrent,
    }
    db.prepare(
      `UPDATE consumer_keys SET name = @name, expires_at = @expires_at, disabled = @disabled, models = @models,
         requests_per_minute = @requests_per_minute, max_concurrent = @max_concurrent WHERE id = @id`,
    ).run(row)
    const next = this.hold(
      row,
      held.rate && row.requests_per_minute === held.row.requests_per_minute ? held.rate : null,
    )
    next.inFlight = held.inFlight
    next.periodStart = held.periodStart
    return this.view(next)
  }

  remove(id: string): boolean {
    const db = this.writable()
    const held = this.find(id)
    db.prepare('DELETE FROM consumer_keys WHERE id = ?').run(id)
    this.byPrefix.delete(held.row.prefix)
    this.byId.delete(id)
    this.dirtyLastUsed.delete(held)
    this.licenses.periods?.forget(id)
    this.countOperatorKeys()
    return true
  }

  /**
   * Writes the last-used times gathered since the previous call (batched: never one write per
   * request). Times the database refuses (a full disk) are kept for the next call, and the error thrown.
   */
  persistLastUsed(): void {
    if (!this.db || this.dirtyLastUsed.size === 0) return
    const stmt = this.db.prepare('UPDATE consumer_keys SET last_used_at = ? WHERE id = ?')
    const dirty = [...this.dirtyLastUsed]
    this.db.transaction(() => {
      for (const h of dirty) stmt.run(h.row.last_used_at, h.row.id)
    })()
    for (const h of dirty) this.dirtyLastUsed.delete(h)
  }

  private hold(row: KeyRow, rate: RateLimiter | null = null): HeldKey {
    const models = row.models === null ? null : (JSON.parse(row.models) as string[])
    const rpm = row.requests_per_minute
    const held: HeldKey = {
      row,
      models,
      hash: Buffer.from(row.secret_sha256, 'hex'),
      rate:
        rate ??
        (rpm === null ? null : new RateLimiter({ capacity: rpm, refillPerSecond: rpm / 60, clock: this.clock })),
      inFlight: 0,
      periodStart: null,
      identity: { kind: 'key', id: row.id, name: row.name, models, licensed: row.license_id !== null },
    }
    this.byPrefix.set(row.prefix, held)
    this.byId.set(row.id, held)
    return held
  }

  private find(id: string): HeldKey {
    const h = this.byId.get(id)
    if (!h) throw new ApiError('not_found', `no consumer key ${id}`)
    return h
  }

  private writable(): GatewayDb {
    if (!this.db) throw new ApiError('unavailable', `named consumer keys are unavailable: ${this.outage}`)
    return this.db
  }

  private view(h: HeldKey): ConsumerKey {
    const r = h.row
    return {
      id: r.id,
      name: r.name,
      prefix: `tdm_${r.prefix}`,
      created_at: r.created_at,
      expires_at: r.expires_at,
      disabled: r.disabled === 1,
      models: h.models,
      requests_per_minute: r.requests_per_minute,
      max_concurrent: r.max_concurrent,
      last_used_at: r.last_used_at,
      in_flight: h.inFlight,
      license_id: r.license_id,
    }
  }

  close(): void {
    this.persistLastUsed()
    this.db?.close()
  }
}
