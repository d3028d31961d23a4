import os from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sqliteOutOfSpace } from '../../src-main/lib/files'
import { startDaemon, type TestDaemon } from '../helpers/daemon'
import { tmpfsVolume } from './tmpfsVolume'

/**
 * Issue 42 #4: with DATA_DIR full, the shop and the keys answered 500 "internal error" (SQLite's
 * "database or disk is full" reached no mapping) and validation-log batches were dropped without
 * a word. DATA_DIR here is a real 20 MB tmpfs filled to the last byte (tmpfsVolume.ts). SQLite may still reuse pages it already holds, so
 * writes are tried until the disk refuses one: none may answer 500.
 */
const volume = tmpfsVolume()
const { root, mounted } = volume

let d: TestDaemon

beforeAll(async () => {
  if (!mounted) return
  d = await startDaemon({ dataDir: root, env: { LICENSING_RATE_LIMIT: '0', MONITOR_INTERVAL_S: '0' } })
})
afterAll(async () => {
  await d?.stop()
  volume.remove()
})

/** Tries `send` until it answers 507 (at most `tries` times): every answer's status. */
async function untilRefused(
  send: (i: number) => Promise<Response>,
  tries = 300,
): Promise<{ statuses: number[]; refusal: string }> {
  const statuses: number[] = []
  for (let i = 0; i < tries; i++) {
    const res = await send(i)
    statuses.push(res.status)
    const text = await res.text()
    if (res.status !== 200) return { statuses, refusal: text }
  }
  return { statuses, refusal: '' }
}

describe.skipIf(!mounted)('a full DATA_DIR (issue 42, needs root to mount a tmpfs)', { timeout: 120_000 }, () => {
  it('answers 507 naming what could not be saved for a product and a consumer key, never 500', async () => {
    volume.fill()
    const product = await untilRefused((i) =>
      d.admin('/v1/admin/products', { method: 'POST', body: JSON.stringify({ slug: `full-${i}`, name: `Full ${i}` }) }),
    )
    expect(product.statuses.at(-1)).toBe(507)
    expect(product.refusal).toMatch(/no space left .*could not create a product/)
    const key = await untilRefused((i) =>
      d.admin('/api/consumer-keys', { method: 'POST', body: JSON.stringify({ name: `full ${i}` }) }),
    )
    expect(key.statuses.at(-1)).toBe(507)
    expect(key.refusal).toMatch(/no space left .*could not create a named consumer key/)
    // SQLite's I/O errors carry no errno through better-sqlite3: on this full volume they count as full, elsewhere not.
    expect(sqliteOutOfSpace({ code: 'SQLITE_IOERR_WRITE' }, root)).toBe(true)
    expect(sqliteOutOfSpace({ code: 'SQLITE_IOERR_WRITE' }, os.tmpdir())).toBe(false)
    expect(sqliteOutOfSpace({ code: 'SQLITE_CONSTRAINT' }, root)).toBe(false)
  })

  it('counts validation calls it cannot record, says so once, and records again when there is room', async () => {
    const recording = async (): Promise<{ recording: boolean; unrecorded_calls: number }> =>
      (await (await d.admin('/v1/admin/validations/recording')).json()) as {
        recording: boolean
        unrecorded_calls: number
      }
    let sent = 0
    // Bursts of validations (under the 128 connections one address may open) until a batch is refused (SQLite may still have pages to reuse).
    for (let round = 0; round < 40 && (await recording()).recording; round++) {
      const burst = Array.from({ length: 100 }, () =>
        fetch(`${d.url}/v1/validate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key: `not-a-key-${sent++}` }),
        }).then((r) => r.status),
      )
      // The callers are answered all the same: validation reads, the log is what cannot be written.
      for (const s of await Promise.all(burst)) expect(s).toBe(200)
      await new Promise((r) => setTimeout(r, 400))
    }
    const during = await recording()
    expect(during.recording).toBe(false)
    expect(during.unrecorded_calls).toBeGreaterThan(0)
    // More batches fail: the count grows, the log line does not repeat.
    for (let i = 0; i < 300; i++)
      await fetch(`${d.url}/v1/validate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: `more-${i}` }),
      })
    await new Promise((r) => setTimeout(r, 800))
    const later = await recording()
    expect(later.unrecorded_calls).toBeGreaterThanOrEqual(during.unrecorded_calls + 300)
    const lines = d.logs.lines.filter((l) => l.includes('no space left for the database; calls are counted'))
    expect(lines).toHaveLength(1)
    // Room again: the next batch is written and the log says so.
    volume.free()
    await fetch(`${d.url}/v1/validate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'after' }),
    })
    await new Promise((r) => setTimeout(r, 800))
    expect((await recording()).recording).toBe(true)
    expect(d.logs.lines.some((l) => l.includes('validation log is written again'))).toBe(true)
    const product = await d.admin('/v1/admin/products', {
      method: 'POST',
      body: JSON.stringify({ slug: 'after-full', name: 'After' }),
    })
    expect(product.status).toBe(200)
  })
})
