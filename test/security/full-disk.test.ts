import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sqliteOutOfSpace } from '../../src-main/lib/files'
import { startDaemon, type TestDaemon } from '../helpers/daemon'

/**
 * Issue 42 #4: with DATA_DIR full, the shop and the keys answered 500 "internal error" (SQLite's
 * "database or disk is full" reached no mapping) and validation-log batches were dropped without
 * a word. DATA_DIR here is a real 20 MB tmpfs filled to the last byte (mounting needs root: the
 * case is skipped elsewhere, and says so). SQLite may still reuse pages it already holds, so
 * writes are tried until the disk refuses one: none may answer 500.
 */
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-full-'))
const mounted = (() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', root], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
const filler = path.join(root, 'filler')

/** Writes `filler` until the volume refuses a byte more. */
function fillDisk(): void {
  const fd = fs.openSync(filler, 'a')
  const block = Buffer.alloc(64 * 1024, 1)
  try {
    for (;;) fs.writeSync(fd, block)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  }
  // The last bytes too: small blocks until nothing fits.
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(512, 1))
  } catch {
    // full
  } finally {
    fs.closeSync(fd)
  }
}

let d: TestDaemon

beforeAll(async () => {
  if (!mounted) return
  d = await startDaemon({ dataDir: root, env: { LICENSING_RATE_LIMIT: '0', MONITOR_INTERVAL_S: '0' } })
})
afterAll(async () => {
  await d?.stop()
  if (mounted) execFileSync('umount', ['-l', root])
  fs.rmSync(root, { recursive: true, force: true })
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
    fillDisk()
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
    fs.rmSync(filler)
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
