import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shq } from '../../../src-main/ssh/quote'
import { startSimKit, type SimKit } from '../../sim/testkit'

/** Deterministic PRNG so a failure names a reproducible case. */
function mulberry32(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PIECES = [
  "'", '"', '`', '$', '$(id)', '${HOME}', '`whoami`', '\\', '\\\\', '\n', '\r', '\t', ' ', '  ', '*', '?', '[a-z]', '{a,b}',
  '~', '!', '!!', '#', ';', '&', '&&', '|', '||', '>', '<', '>>', '(', ')', "'\\''", '%s', '%n', '-n', '-e', '--', '=',
  'é', 'ß', '日本語', '🦀', '\u00a0', '\u200b', '\x01', '\x1b[31m', '\x7f', 'a', 'Z', '0', '/', '.', '..', 'EOF', "$'x'",
]

export function nastyStrings(count: number, seed = 1234): string[] {
  const rnd = mulberry32(seed)
  const out: string[] = ['', "'", "''", '\n', '-n', '-e', '$(rm -rf "$HOME")', "'; echo pwned; '", '\\', '*']
  while (out.length < count) {
    const n = 1 + Math.floor(rnd() * 8)
    let s = ''
    for (let i = 0; i < n; i++) {
      if (rnd() < 0.2) s += String.fromCodePoint(0x20 + Math.floor(rnd() * 0x2fff))
      else s += PIECES[Math.floor(rnd() * PIECES.length)]
    }
    // Lone surrogates cannot round-trip through UTF-8; every other code point must.
    if (!/[\ud800-\udfff]/.test(s.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) out.push(s)
  }
  return out
}

describe('shq through a real remote bash over SSH', () => {
  let kit: SimKit
  beforeAll(async () => {
    kit = await startSimKit()
  })
  afterAll(async () => kit.close())

  it('300 generated strings come back byte for byte', async () => {
    const cases = nastyStrings(300)
    const t = kit.target(kit.sim.node1)
    const results = await Promise.all(cases.map((s) => kit.pool.exec(t, `printf '%s' ${shq(s)}`, { timeoutMs: 20_000 })))
    const mismatches = cases.filter((s, i) => results[i]!.stdout !== s || results[i]!.code !== 0)
    expect(mismatches).toEqual([])
  })

  it('each value stays one argument', async () => {
    const cases = nastyStrings(60, 99)
    const t = kit.target(kit.sim.node2)
    const cmd = `for a in ${cases.map(shq).join(' ')}; do printf '%s\\0' "$a"; done`
    const res = await kit.pool.exec(t, cmd)
    expect(res.stdout.split('\0').slice(0, -1)).toEqual(cases)
  })

  it('double-quoted $HOME paths expand remotely', async () => {
    const { homePath } = await import('../../../src-main/ssh/quote')
    const res = await kit.pool.exec(kit.target(kit.sim.node1), `printf '%s' ${homePath(['.cache', 'huggingface'])}`)
    expect(res.stdout).toBe(`${kit.sim.node1.home}/.cache/huggingface`)
  })
})
