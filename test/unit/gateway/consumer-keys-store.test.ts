import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { ConsumerKeys } from '../../../src-main/gateway/keys/consumerKeyStore'
import { KeyUsageStore, USAGE_RETENTION_MS, usageCounts } from '../../../src-main/gateway/keys/keyUsage'
import type { RequestEntry } from '../../../src-main/gateway/relay/requestLog'

const dirs: string[] = []
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-keys-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})
const logs = new MemorySink()
const logger = createLogger({ redactor: new Redactor(), sink: logs, level: 'debug' })
const entry = (status = 200): RequestEntry => ({ status, aborted: false }) as unknown as RequestEntry

describe('ConsumerKeys', () => {
  it('keeps keys across a restart, with the secret never stored', () => {
    const dir = tmp()
    const clock = new ManualClock()
    const keys = ConsumerKeys.open(dir, clock, logger)
    const k = keys.create({ name: 'chat ui', models: ['a', 'a', 'b'], requests_per_minute: 10 })
    expect(k.models).toEqual(['a', 'b'])
    keys.close()
    const again = ConsumerKeys.open(dir, clock, logger)
    expect(again.list().map((x) => x.name)).toEqual(['chat ui'])
    expect(again.identify(k.secret)?.name).toBe('chat ui')
    expect(again.identify(k.secret.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')))).toBeNull()
    again.close()
    expect(fs.readFileSync(path.join(dir, 'gateway.db')).includes(k.secret)).toBe(false)
  })

  it('fails closed when gateway.db cannot be opened: a key is required and none is accepted', () => {
    const dir = tmp()
    fs.writeFileSync(path.join(dir, 'gateway.db'), 'this is not a database, it is a text file of sufficient length')
    const keys = ConsumerKeys.open(dir, new ManualClock(), logger)
    expect(keys.required).toBe(true)
    expect(keys.outage).toMatch(/gateway\.db/)
    expect(() => keys.create({ name: 'x' })).toThrow(/unavailable/)
    expect(logs.lines.some((l) => l.includes('named consumer keys are unavailable'))).toBe(true)
  })

  it('refills a key’s rate with the injected clock and releases its concurrency slots', () => {
    const clock = new ManualClock()
    const keys = ConsumerKeys.open(tmp(), clock, logger)
    const k = keys.create({ name: 'batch', requests_per_minute: 2, max_concurrent: 2 })
    const who = keys.identify(k.secret)!
    const r1 = keys.admit(who)
    keys.admit(who)()
    expect(() => keys.admit(who)).toThrow(/2 requests per minute/)
    clock.advance(30_000)
    const r3 = keys.admit(who)
    expect(() => keys.admit(who)).toThrow()
    clock.advance(120_000)
    expect(() => keys.admit(who)).toThrow(/2 requests running/)
    r1()
    r1()
    r3()
    expect(keys.list()[0]!.in_flight).toBe(0)
    keys.close()
  })
})

describe('KeyUsageStore', () => {
  it('adds a request to its key’s hour and prunes hours older than 90 days', () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 30))
    const keys = ConsumerKeys.open(tmp(), clock, logger)
    const k = keys.create({ name: 'chat ui' })
    const usage = new KeyUsageStore(keys.database!, clock)
    const used = {
      prompt_tokens: 5,
      completion_tokens: 9,
      tokens_estimated: true,
      ttft_ms: 120,
      tokens_per_s: 20,
      generation_s: 0.4,
      audio_seconds: 0,
      speech_characters: 0,
      model: null,
    }
    usage.record(k.id, usageCounts(entry(), used))
    usage.record(k.id, usageCounts(entry(502), null))
    const hour = Date.UTC(2026, 0, 1, 10)
    const first = usage.query(hour)
    expect(first.hours).toEqual([
      expect.objectContaining({
        hour,
        requests: 2,
        errors: 1,
        completion_tokens: 9,
        estimated_completion_tokens: 9,
        streams: 1,
        stream_tokens: 8,
      }),
    ])
    clock.advance(USAGE_RETENTION_MS + 3600_000)
    usage.record(k.id, usageCounts(entry(), null))
    usage.flush()
    expect(usage.query(0).hours.map((h) => h.hour)).toEqual([Math.floor(clock.now() / 3600_000) * 3600_000])
    keys.close()
  })

  it('drops the unwritten usage of a key deleted meanwhile', () => {
    const clock = new ManualClock()
    const keys = ConsumerKeys.open(tmp(), clock, logger)
    const k = keys.create({ name: 'gone' })
    const usage = new KeyUsageStore(keys.database!, clock)
    usage.record(k.id, usageCounts(entry(), null))
    keys.remove(k.id)
    usage.flush()
    expect(usage.query(0).hours).toEqual([])
    keys.close()
  })
})
