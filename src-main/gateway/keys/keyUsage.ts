import type { KeyUsageHour } from '../../contract/consumerKeys'
import type { Clock } from '../../lib/clock'
import type { WriteOutage } from '../../lib/writeOutage'
import type { GatewayDb } from '../gatewayDb'
import type { RequestEntry } from '../relay/requestLog'
import type { RequestUsage } from '../relay/usageMeter'

/** Usage rows are kept this long (issue 16: per key per hour for 90 days). */
export const USAGE_RETENTION_MS = 90 * 24 * 3600_000
const HOUR_MS = 3600_000
/** How often the tally is written: what a kill -9 can lose at most. */
export const KEY_USAGE_FLUSH_MS = 5000

type Counts = Omit<KeyUsageHour, 'key_id' | 'hour'>
const FIELDS = [
  'requests',
  'errors',
  'prompt_tokens',
  'completion_tokens',
  'estimated_completion_tokens',
  'streams',
  'ttft_ms_sum',
  'stream_tokens',
  'stream_seconds',
  'audio_seconds',
  'speech_characters',
] as const satisfies readonly (keyof Counts)[]

function zero(): Counts {
  return Object.fromEntries(FIELDS.map((f) => [f, 0])) as Counts
}

/** What one finished request adds to its key's hour. */
export function usageCounts(entry: RequestEntry, usage: RequestUsage | null): Counts {
  const c = zero()
  c.requests = 1
  c.errors = entry.status >= 400 || entry.aborted ? 1 : 0
  if (!usage) return c
  c.prompt_tokens = usage.prompt_tokens ?? 0
  c.completion_tokens = usage.completion_tokens ?? 0
  c.estimated_completion_tokens = usage.tokens_estimated ? (usage.completion_tokens ?? 0) : 0
  if (usage.ttft_ms !== null) {
    c.streams = 1
    c.ttft_ms_sum = usage.ttft_ms
  }
  if (usage.tokens_per_s !== null) {
    c.stream_tokens = Math.max(0, (usage.completion_tokens ?? 0) - 1)
    c.stream_seconds = usage.generation_s
  }
  c.audio_seconds = usage.audio_seconds
  c.speech_characters = usage.speech_characters
  return c
}

/**
 * Per key per hour usage in gateway.db. Requests add to an in-memory tally that is written in one
 * transaction every few seconds (and before every read), so the hot path never waits for a disk
 * sync; rows older than 90 days are pruned as hours pass. A tally the database refuses (a full
 * disk) stays in memory for the next write, and the outage is logged once (`outage`).
 */
export class KeyUsageStore {
  private pending = new Map<string, KeyUsageHour>()
  private lastPrune = 0
  private readonly upsert
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly db: GatewayDb,
    private readonly clock: Clock,
    private readonly beforeFlush: () => void = () => undefined,
    /** Where a refused write is told; without it the error reaches the caller. */
    private readonly outage?: WriteOutage,
  ) {
    const cols = FIELDS.join(', ')
    const vals = FIELDS.map((f) => `@${f}`).join(', ')
    const sets = FIELDS.map((f) => `${f} = ${f} + excluded.${f}`).join(', ')
    // A key deleted meanwhile takes its unwritten usage with it.
    this.upsert = db.prepare(
      `INSERT INTO key_usage_hourly (key_id, hour, ${cols})
       SELECT @key_id, @hour, ${vals} WHERE EXISTS (SELECT 1 FROM consumer_keys WHERE id = @key_id)
       ON CONFLICT (key_id, hour) DO UPDATE SET ${sets}`,
    )
  }

  record(keyId: string, counts: Counts): void {
    const hour = Math.floor(this.clock.now() / HOUR_MS) * HOUR_MS
    const k = `${keyId}|${hour}`
    let row = this.pending.get(k)
    if (!row) {
      row = { key_id: keyId, hour, ...zero() }
      this.pending.set(k, row)
    }
    for (const f of FIELDS) row[f] += counts[f]
  }

  /**
   * Writes the tally and prunes what has aged out (at most once an hour). A write the database
   * refuses keeps the tally for the next one; with an `outage` it is told there, not thrown (the
   * timer that calls this has no one to answer).
   */
  flush(): void {
    let wrote: boolean
    try {
      this.beforeFlush()
      wrote = this.write()
    } catch (err) {
      if (this.outage === undefined) throw err
      this.outage.fail(err, this.pending.size)
      return
    }
    if (wrote) this.outage?.written()
  }

  /** One transaction of the tally (cleared once it is written) and the hourly prune; false when there was nothing to write. */
  private write(): boolean {
    const rows = [...this.pending.values()]
    const now = this.clock.now()
    const prune = now - this.lastPrune >= HOUR_MS
    if (rows.length === 0 && !prune) return false
    this.db.transaction(() => {
      for (const r of rows) this.upsert.run(r)
      if (prune) this.db.prepare('DELETE FROM key_usage_hourly WHERE hour < ?').run(now - USAGE_RETENTION_MS)
    })()
    this.pending = new Map()
    if (prune) this.lastPrune = now
    return true
  }

  /** Hours since `from` (oldest first) and totals per key over them. */
  query(from: number, keyId?: string): { hours: KeyUsageHour[]; totals: KeyUsageHour[] } {
    this.flush()
    const where = keyId === undefined ? 'hour >= ?' : 'hour >= ? AND key_id = ?'
    const args = keyId === undefined ? [from] : [from, keyId]
    const hours = this.db
      .prepare(`SELECT * FROM key_usage_hourly WHERE ${where} ORDER BY hour, key_id`)
      .all(...args) as KeyUsageHour[]
    const sums = FIELDS.map((f) => `SUM(${f}) AS ${f}`).join(', ')
    const totals = this.db
      .prepare(`SELECT key_id, MIN(hour) AS hour, ${sums} FROM key_usage_hourly WHERE ${where} GROUP BY key_id`)
      .all(...args) as KeyUsageHour[]
    return { hours, totals }
  }

  start(intervalMs = KEY_USAGE_FLUSH_MS): void {
    this.timer = setInterval(() => this.flush(), intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.flush()
  }
}
