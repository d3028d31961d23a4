import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ConsumerKeys } from '../../../src-main/gateway/keys/consumerKeyStore'
import { licenseAccessKeys } from '../../../src-main/gateway/keys/licenseAccessKeys'

const dirs: string[] = []
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-acc-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})
const logger = createLogger({ sink: new MemorySink() })
const grant = { models: ['llm'], requestsPerMinute: 30, concurrentStreams: 2 }

describe('license access keys', () => {
  it('issues a key bound to the license with the tier’s models and limits, the secret stored hashed', () => {
    const dir = tmp()
    const keys = ConsumerKeys.open(dir, new ManualClock(), logger)
    const { secret, prefix } = licenseAccessKeys(keys).issue('lic-1', 'license lic-1', grant)
    expect(secret.startsWith(`${prefix}_`)).toBe(true)
    expect(keys.identify(secret)?.models).toEqual(['llm'])
    expect(keys.forLicense('lic-1')).toMatchObject({ license_id: 'lic-1', requests_per_minute: 30, max_concurrent: 2 })
    const raw = fs.readFileSync(path.join(dir, 'gateway.db'))
    expect(raw.includes(Buffer.from(secret))).toBe(false)
    keys.close()
    const again = ConsumerKeys.open(dir, new ManualClock(), logger)
    expect(again.forLicense('lic-1')?.license_id).toBe('lic-1')
    expect(again.identify(secret)).not.toBeNull()
    again.close()
  })

  it('refuses a second key for one license and leaves operator keys unbound', () => {
    const keys = ConsumerKeys.open(tmp(), new ManualClock(), logger)
    const access = licenseAccessKeys(keys)
    access.issue('lic-1', 'a', grant)
    expect(() => access.issue('lic-1', 'b', grant)).toThrow(/already has a gateway key/)
    expect(keys.create({ name: 'ops' }).license_id).toBeNull()
    expect(keys.list()).toHaveLength(2)
    keys.close()
  })

  it('rotates the secret in place: the old one is refused, the key and its limits stay', () => {
    const keys = ConsumerKeys.open(tmp(), new ManualClock(), logger)
    const access = licenseAccessKeys(keys)
    const first = access.issue('lic-2', 'k', grant)
    const id = keys.forLicense('lic-2')!.id
    const next = access.rotate('lic-2')!
    expect(next.secret).not.toBe(first.secret)
    expect(keys.identify(first.secret)).toBeNull()
    expect(keys.identify(next.secret)?.id).toBe(id)
    expect(keys.forLicense('lic-2')).toMatchObject({ id, requests_per_minute: 30 })
    expect(access.rotate('nobody')).toBeNull()
    keys.close()
  })

  it('follows a change of the tier’s grant', () => {
    const keys = ConsumerKeys.open(tmp(), new ManualClock(), logger)
    const access = licenseAccessKeys(keys)
    const { secret } = access.issue('lic-3', 'k', grant)
    expect(access.setGrant('lic-3', { models: null, requestsPerMinute: null, concurrentStreams: 5 })).toBe(true)
    expect(keys.identify(secret)?.models).toBeNull()
    expect(keys.forLicense('lic-3')).toMatchObject({ requests_per_minute: null, max_concurrent: 5 })
    expect(access.setGrant('nobody', grant)).toBe(false)
    keys.close()
  })

  it("answers many licenses' tokens per model in their own periods, written and pending, in one call", () => {
    const keys = ConsumerKeys.open(tmp(), new ManualClock(), logger)
    const access = licenseAccessKeys(keys)
    access.issue('lic-1', 'a', grant)
    access.issue('lic-2', 'b', grant)
    const k1 = keys.forLicense('lic-1')!.id
    const k2 = keys.forLicense('lic-2')!.id
    const ops = keys.create({ name: 'ops' }).id
    const n = (tokens: number, audio = 0) => ({
      requests: 1,
      prompt_tokens: tokens,
      completion_tokens: 1,
      audio_seconds: audio,
    })
    const periods = keys.licenses.periods!
    periods.add(k1, 100, 'm-a', n(9))
    periods.add(k1, 100, 'm-b', n(4, 12.5))
    periods.add(k1, 50, 'm-a', n(1000)) // an earlier period: not asked for
    periods.add(k2, 200, 'm-a', n(19))
    periods.add(ops, 100, 'm-a', n(77)) // no license
    periods.write()
    periods.add(k1, 100, 'm-a', n(0)) // still pending
    periods.add(k1, 100, 'm-b', n(0, 2)) // still pending
    const got = access.periodModels([
      { licenseId: 'lic-1', periodStart: 100 },
      { licenseId: 'lic-2', periodStart: 200 },
      { licenseId: 'lic-3', periodStart: 100 },
    ])
    const sorted = (l: string) => [...(got.get(l) ?? [])].sort((a, b) => a.model.localeCompare(b.model))
    expect(sorted('lic-1')).toEqual([
      { model: 'm-a', requests: 2, tokens: 11, audioSeconds: 0 },
      { model: 'm-b', requests: 2, tokens: 6, audioSeconds: 14.5 },
    ])
    expect(sorted('lic-2')).toEqual([{ model: 'm-a', requests: 1, tokens: 20, audioSeconds: 0 }])
    expect(access.audioSecondsUsed('lic-1', 100)).toBe(14.5)
    expect(access.audioSecondsUsed('lic-3', 100)).toBeNull()
    expect(got.has('lic-3')).toBe(false)
    expect(access.periodModels([])).toEqual(new Map())
    keys.close()
  })
})
