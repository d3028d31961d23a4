import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { spoolHolder, UploadSpool } from '../../../src-main/gateway/audio/spool'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'

/**
 * Issue 45: a buyer's key may hold a third of the upload spool, so two buyers uploading all they
 * can leave a third's room for the next; the operator's keys and the LAN are held to the total only.
 */
const KiB = 1024
const roots: string[] = []
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true })
})

function spool(budgetBytes: number): UploadSpool {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-share-'))
  roots.push(root)
  return UploadSpool.open(root, { budgetBytes, diskFloorBytes: 0 }, createLogger({ sink: new MemorySink() }))
}

const sold = (id: string) => ({ kind: 'key', id, name: id, models: null, licensed: true }) as const
const own = { kind: 'key', id: 'lan', name: 'lan', models: null, licensed: false } as const

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(ApiError)
  return err as ApiError
}

describe('the upload spool’s share per sold key', () => {
  it('charges only keys sold with a license', () => {
    expect(spoolHolder(sold('a'))).toBe('key a')
    expect(spoolHolder(own)).toBeNull()
    expect(spoolHolder({ kind: 'open' })).toBeNull()
    expect(spoolHolder(undefined)).toBeNull()
  })

  it('lets two buyers hold a third each and a third buyer still find its share', async () => {
    const s = spool(900 * KiB)
    await s.lease(300 * KiB, spoolHolder(sold('a')))
    const b = await s.lease(200 * KiB, spoolHolder(sold('b')))
    // Grown as its bytes are written, past its reservation, up to its share and no further.
    await b.grow(300 * KiB)
    const over = await refusal(b.grow(1 * KiB))
    expect(over.status).toBe(413)
    expect(over.message).toMatch(/larger than one key may hold in the upload spool/)
    expect(s.heldBy('key b')).toBe(300 * KiB)
    // A second upload of a key that holds its share waits its turn.
    const more = await refusal(s.lease(1 * KiB, spoolHolder(sold('a'))))
    expect(more.status).toBe(503)
    expect(more.message).toMatch(/this key's uploads in progress hold 300 KiB|this key's uploads in progress hold/)
    await s.lease(300 * KiB, spoolHolder(sold('c')))
    expect(s.inUse).toBe(900 * KiB)
  })

  it('refuses with 413 a buyer’s upload declared past its share; the operator’s keys keep the whole spool', async () => {
    const s = spool(900 * KiB)
    expect((await refusal(s.lease(301 * KiB, spoolHolder(sold('a'))))).status).toBe(413)
    expect(s.inUse).toBe(0)
    const lan = await s.lease(800 * KiB, spoolHolder(own))
    await lan.release()
    expect(s.inUse).toBe(0)
  })

  it('gives a buyer’s room back when its upload ends', async () => {
    const s = spool(900 * KiB)
    const a = await s.lease(300 * KiB, spoolHolder(sold('a')))
    await a.release()
    expect(s.heldBy('key a')).toBe(0)
    await s.lease(300 * KiB, spoolHolder(sold('a')))
  })
})
