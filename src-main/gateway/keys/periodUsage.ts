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
 * A license key's usage per access period and model (issue 45), for its token quota and the
 * buyer's `GET /v1/usage`. Requests add to a tally in memory that the key usage store writes in its
 * batch every few seconds (kill -9 loses at most that batch; a written batch is cleared in the same
 * step, so nothing is counted twice). The running total a quota check reads is held per key for
 * the period last asked for and read from the database only when that period changes.
 */
export class PeriodUsage {
  private pending = new Map<string, PendingRow>()
  private readonly live = new Map<string, { start: number; tokens: number }>()
  private readonly upsert
  private readonly storedTokens
  private readonly byModel

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
    this.storedTokens = db.prepare(
      `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS n FROM key_period_usage
        WHERE key_id = ? AND period_start = ?`,
    )
    this.byModel = db.prepare(
      `SELECT model, requests, prompt_tokens, completion_tokens, audio_seconds FROM key_period_usage
        WHERE key_id = ? AND period_start = ?`,
    )
  }

  /** Tokens (prompt + completion) the key has used in the period that began at `start`. */
  tokens(keyId: string, start: number): number {
    const cur = this.live.get(keyId)
    if (cur !== undefined && cur.start === start) return cur.tokens
    let tokens = (this.storedTokens.get(keyId, start) as { n: number }).n
    for (const p of this.pending.values())
      if (p.key_id === keyId && p.period_start === start) tokens += p.prompt_tokens + p.completion_tokens
    this.live.set(keyId, { start, tokens })
    return tokens
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
    if (cur !== undefined && cur.start === start) cur.tokens += c.prompt_tokens + c.completion_tokens
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

  /** The period's usage per model, stored and not yet written (most tokens first). */
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
          a.model.localeCompare(b.model),
      )
  }

  /** A deleted key's running total goes with it. */
  forget(keyId: string): void {
    this.live.delete(keyId)
  }
}
