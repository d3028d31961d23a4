import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shq } from '../../../src-main/ssh/quote'
import { nastyStrings, startSimKit, type SimKit } from '../../sim/testkit'

describe('shq through a real remote bash over SSH', () => {
  let kit: SimKit
  beforeAll(async () => {
    kit = await startSimKit()
  })
  afterAll(async () => kit.close())

  it('300 generated strings come back byte for byte', async () => {
    const cases = nastyStrings(300)
    const t = kit.target(kit.sim.node1)
    const results = await Promise.all(
      cases.map((s) => kit.pool.exec(t, `printf '%s' ${shq(s)}`, { timeoutMs: 20_000 })),
    )
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
