import type { GatewayDb } from '../gatewayDb'

/** What one finished request of a license's key adds to its period, under the model it named. */
export interface PeriodCounts {
  readonly requests: number
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly audio_seconds: number
}

export interface PeriodModelUsage extends PeriodCounts {
  readonly model: string
}

/** A license key's tokens (prompt + completion), audio seconds and requests on one model in a period. */
export interface LicenseModelTokens {
  readonly model: string
  readonly requests: number
  readonly tokens: number
  readonly audioSeconds: number
}

/** What a key has spent of its period: the two quotas a license's tier can set. */
export interface PeriodSpent {
  tokens: number
  audioSeconds: number
}

interface PendingRow {
  key_id: string
  period_start: number
  model: string
  requests: number
  prompt_tokens: number
  completion_tokens: number
  audio_seconds: number
}

function addCounts(into: PendingRow, c: PeriodCounts): void {
  into.requests += c.requests
  into.prompt_tokens += c.prompt_tokens
  into.completion_tokens += c.completion_tokens
  into.audio_seconds += c.audio_seconds
}

/**
 * A license key's usage per access period and model (issue 45), for its token and audio quotas
 * and the buyer's `GET /v1/usage`. Requests add to a tally in memory that the key usage store writes in its
 * batch every few seconds (kill -9 loses at most that batch; a written batch is cleared in the same
 * step, so nothing is counted twice). The running total a quota check reads is held per key for
 * the period last asked for and read from the database only when that period changes.
 */
export class PeriodUsage {
  private pending = new Map<string, PendingRow>()
  private readonly live = new Map<string, PeriodSpent & { start: number }>()
  private readonly upsert
  private readonly storedSpent
  private readonly byModel
  private readonly byLicenseModel

  constructor(private readonly db: GatewayDb) {
    // A key deleted meanwhile takes its unwritten usage with it.
    this.upsert = db.prepare(
      `INSERT INTO key_period_usage (key_id, period_start, model, requests, prompt_tokens, completion_tokens, audio_seconds)
       SELECT @key_id, @period_start, @model, @requests, @prompt_tokens, @completion_tokens, @audio_seconds
        WHERE EXISTS (SELECT 1 FROM consumer_keys WHERE id = @key_id)
       ON CONFLICT (key_id, period_start, model) DO UPDATE SET
         requests = requests + excluded.requests,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         audio_seconds = audio_seconds + excluded.audio_seconds`,
    )
    this.storedSpent = db.prepare(
      `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS tokens,
              COALESCE(SUM(audio_seconds), 0) AS audioSeconds FROM key_period_usage
        WHERE key_id = ? AND period_start = ?`,
    )
    this.byModel = db.prepare(
      `SELECT model, requests, prompt_tokens, completion_tokens, audio_seconds FROM key_period_usage
        WHERE key_id = ? AND period_start = ?`,
    )
    // Many licenses' periods in one read: the key bound to each license, in the period asked for it.
    this.byLicenseModel = db.prepare(
      `SELECT c.license_id AS license_id, u.model AS model, SUM(u.requests) AS requests,
              SUM(u.prompt_tokens + u.completion_tokens) AS tokens, SUM(u.audio_seconds) AS audioSeconds
         FROM json_each(?) q
         JOIN consumer_keys c ON c.license_id = json_extract(q.value, '$.l')
         JOIN key_period_usage u ON u.key_id = c.id AND u.period_start = json_extract(q.value, '$.s')
        GROUP BY c.license_id, u.model`,
    )
  }

  /**
   * Tokens per model of many licenses' keys, each in its own period, stored and not yet written:
   * one query however many licenses. `licenseOf` names the license a pending key's row is bound to.
   */
  licenseModels(
    periods: ReadonlyMap<string, number>,
    licenseOf: (keyId: string) => string | null,
  ): Map<string, LicenseModelTokens[]> {
    const out = new Map<string, Map<string, LicenseModelTokens>>()
    const add = (licenseId: string, r: LicenseModelTokens) => {
      let models = out.get(licenseId)
      if (!models) out.set(licenseId, (models = new Map()))
      const cur = models.get(r.model)
      models.set(
        r.model,
        cur === undefined
          ? { ...r }
          : {
              model: r.model,
              requests: cur.requests + r.requests,
              tokens: cur.tokens + r.tokens,
              audioSeconds: cur.audioSeconds + r.audioSeconds,
            },
      )
    }
    if (periods.size === 0) return new Map()
    const asked = JSON.stringify([...periods].map(([l, s]) => ({ l, s })))
    for (const { license_id, ...r } of this.byLicenseModel.all(asked) as (LicenseModelTokens & {
      license_id: string
    })[])
      add(license_id, r)
    for (const p of this.pending.values()) {
      const licenseId = licenseOf(p.key_id)
      if (licenseId === null || periods.get(licenseId) !== p.period_start) continue
      add(licenseId, {
        model: p.model,
        requests: p.requests,
        tokens: p.prompt_tokens + p.completion_tokens,
        audioSeconds: p.audio_seconds,
      })
    }
    return new Map([...out].map(([l, models]) => [l, [...models.values()]]))
  }

  /** Tokens (prompt + completion) the key has used in the period that began at `start`. */
  tokens(keyId: string, start: number): number {
    return this.spent(keyId, start).tokens
  }

  /** Seconds of audio the key has used in the period that began at `start`. */
  audioSeconds(keyId: string, start: number): number {
    return this.spent(keyId, start).audioSeconds
  }

  /** The key's running totals for the period: held in memory, read from the database when the period changes. */
  private spent(keyId: string, start: number): PeriodSpent {
    const cur = this.live.get(keyId)
    if (cur !== undefined && cur.start === start) return cur
    const spent = { ...(this.storedSpent.get(keyId, start) as PeriodSpent), start }
    for (const p of this.pending.values())
      if (p.key_id === keyId && p.period_start === start) {
        spent.tokens += p.prompt_tokens + p.completion_tokens
        spent.audioSeconds += p.audio_seconds
      }
    this.live.set(keyId, spent)
    return spent
  }

  add(keyId: string, start: number, model: string, c: PeriodCounts): void {
    const k = `${keyId}|${start}|${model}`
    let row = this.pending.get(k)
    if (!row) {
      row = {
        key_id: keyId,
        period_start: start,
        model,
        requests: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        audio_seconds: 0,
      }
      this.pending.set(k, row)
    }
    addCounts(row, c)
    const cur = this.live.get(keyId)
    if (cur !== undefined && cur.start === start) {
      cur.tokens += c.prompt_tokens + c.completion_tokens
      cur.audioSeconds += c.audio_seconds
    }
  }

  /** Writes the tally in one transaction and clears it; a refused write keeps it and throws. */
  write(): void {
    if (this.pending.size === 0) return
    const rows = [...this.pending.values()]
    this.db.transaction(() => {
      for (const r of rows) this.upsert.run(r)
    })()
    this.pending = new Map()
  }

  /** The period's usage per model, stored and not yet written (most tokens first, then most audio). */
  models(keyId: string, start: number): PeriodModelUsage[] {
    const rows = new Map<string, PendingRow>()
    for (const r of this.byModel.all(keyId, start) as PeriodModelUsage[])
      rows.set(r.model, { ...r, key_id: keyId, period_start: start })
    for (const p of this.pending.values()) {
      if (p.key_id !== keyId || p.period_start !== start) continue
      const r = rows.get(p.model)
      if (r === undefined) rows.set(p.model, { ...p })
      else addCounts(r, p)
    }
    return [...rows.values()]
      .map(({ model, requests, prompt_tokens, completion_tokens, audio_seconds }) => ({
        model,
        requests,
        prompt_tokens,
        completion_tokens,
        audio_seconds,
      }))
      .sort(
        (a, b) =>
          b.prompt_tokens + b.completion_tokens - (a.prompt_tokens + a.completion_tokens) ||
          b.audio_seconds - a.audio_seconds ||
          a.model.localeCompare(b.model),
      )
  }

  /** A deleted key's running total goes with it. */
  forget(keyId: string): void {
    this.live.delete(keyId)
  }
}
