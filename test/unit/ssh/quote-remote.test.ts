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
    // Twenty printf calls per command, each string NUL-terminated: 15 commands, not 300 queued on
    // one connection (which timed out on a loaded machine), and each string is still its own word.
    const groups = Array.from({ length: 15 }, (_, g) => cases.slice(g * 20, g * 20 + 20))
    const results = await Promise.all(
      groups.map((group) =>
        kit.pool.exec(t, group.map((s) => `printf '%s\\0' ${shq(s)}`).join('; '), { timeoutMs: 20_000 }),
      ),
    )
    expect(results.map((r) => r.code)).toEqual(groups.map(() => 0))
    const back = results.flatMap((r) => r.stdout.split('\0').slice(0, -1))
    const mismatches = cases.filter((s, i) => back[i] !== s)
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
