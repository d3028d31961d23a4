import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import {
  detect,
  entropy,
  ibanValid,
  luhnValid,
  ScrubSessions,
  SessionNotFound,
} from '../../../src-main/gateway/scrub/scrub'

interface Corpus {
  terms: string[]
  examples: { text: string; expect: { type: string; value: string }[] }[]
}
const corpus = JSON.parse(fs.readFileSync(path.join(__dirname, 'scrub-corpus.json'), 'utf8')) as Corpus

describe('scrub detectors on the corpus', () => {
  it.each(corpus.examples.map((e) => [e.text, e.expect] as const))('%j', (text, expected) => {
    expect(detect(text, corpus.terms).map((f) => ({ type: f.type, value: f.value }))).toEqual(expected)
  })

  it('reports offsets that slice back to the value', () => {
    const text = 'x ana@example.com y 10.1.2.3'
    for (const f of detect(text)) expect(text.slice(f.start, f.end)).toBe(f.value)
  })
})

describe('checksums', () => {
  it('Luhn accepts real test cards and rejects a changed digit', () => {
    for (const c of ['4111111111111111', '5500000000000004', '378282246310005', '6011111111111117', '3530111333300000'])
      expect(luhnValid(c), c).toBe(true)
    expect(luhnValid('4111111111111112')).toBe(false)
    expect(luhnValid('41111111111')).toBe(false) // too short
    expect(luhnValid('4111 1111 1111 1111')).toBe(false) // digits only
  })

  it('mod-97 accepts valid IBANs and rejects bad check digits and lengths', () => {
    for (const i of [
      'DE89370400440532013000',
      'GB82WEST12345698765432',
      'FR1420041010050500013M02606',
      'NL91ABNA0417164300',
      'BE68539007547034',
      'CH9300762011623852957',
    ])
      expect(ibanValid(i), i).toBe(true)
    expect(ibanValid('DE89370400440532013001')).toBe(false)
    expect(ibanValid('DE8937040044053201300')).toBe(false) // German IBANs are 22 long
    expect(ibanValid('de89370400440532013000')).toBe(false)
  })

  it('measures entropy in bits per character', () => {
    expect(entropy('aaaa')).toBe(0)
    expect(entropy('abcd')).toBe(2)
  })
})

describe('scrub sessions', () => {
  it('gives the same value the same placeholder and numbers each type on its own', async () => {
    const s = new ScrubSessions(new ManualClock())
    const r = await s.scrub('a@x.io b@x.io A@X.IO 10.0.0.1 a@x.io')
    expect(r.text).toBe('[EMAIL_1] [EMAIL_2] [EMAIL_1] [IP_1] [EMAIL_1]')
    expect(await s.rehydrate('[EMAIL_2] wrote to [email_1] from [ IP_1 ]', r.session_id)).toEqual({
      text: 'b@x.io wrote to a@x.io from 10.0.0.1',
      replaced: 3,
    })
  })

  it('leaves unknown placeholders alone', async () => {
    const s = new ScrubSessions(new ManualClock())
    const r = await s.scrub('mail a@x.io')
    expect((await s.rehydrate('[EMAIL_2] [PHONE_1] [EMAIL_1]', r.session_id)).text).toBe('[EMAIL_2] [PHONE_1] a@x.io')
  })

  it('expires a session after its TTL since last use (ManualClock)', async () => {
    const clock = new ManualClock()
    const s = new ScrubSessions(clock, [], 60_000)
    const { session_id } = await s.scrub('a@x.io')
    clock.advance(59_000)
    expect((await s.rehydrate('[EMAIL_1]', session_id)).text).toBe('a@x.io') // use refreshes it
    clock.advance(59_000)
    expect((await s.rehydrate('[EMAIL_1]', session_id)).text).toBe('a@x.io')
    clock.advance(60_001)
    await expect(s.rehydrate('[EMAIL_1]', session_id)).rejects.toThrow(SessionNotFound)
    expect(s.size).toBe(0)
  })

  it('drops the least recently used session past the cap', async () => {
    const s = new ScrubSessions(new ManualClock(), [], 60_000, 2)
    const a = (await s.scrub('a@x.io')).session_id
    const b = (await s.scrub('b@x.io')).session_id
    await s.rehydrate('', a) // a is now the most recent
    await s.scrub('c@x.io')
    expect(s.size).toBe(2)
    await expect(s.rehydrate('', b)).rejects.toThrow(SessionNotFound)
    expect((await s.rehydrate('[EMAIL_1]', a)).text).toBe('a@x.io')
  })

  it('refuses an unknown session id', async () => {
    const s = new ScrubSessions(new ManualClock())
    await expect(s.rehydrate('x', 'nope')).rejects.toThrow(SessionNotFound)
    await expect(s.scrub('x', 'nope')).rejects.toThrow(SessionNotFound)
  })

  it('replaces operator terms case-insensitively, only as whole words', async () => {
    const s = new ScrubSessions(new ManualClock(), ['Nightjar'])
    expect((await s.scrub('Nightjar, nightjars, NIGHTJAR.')).text).toBe('[TERM_1], nightjars, [TERM_1].')
  })
})
