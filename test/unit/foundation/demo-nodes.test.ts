import { describe, expect, it } from 'vitest'
import {
  DEMO_NODE1_ONLY,
  DEMO_SECOND_KEY,
  bundledRepos,
  demoCachedModels,
  demoNodeCount,
  demoPlacements,
} from '../../sim/demoState'

/** The demo's DEMO_NODES and DEMO_PLACEMENTS (issue 34, simulator and demo) and what each node holds. */
describe('demo nodes and placements', () => {
  it('DEMO_NODES: 2 by default, 2 to 8 taken, anything else refused with the range', () => {
    expect(demoNodeCount(undefined)).toBe(2)
    expect(demoNodeCount('')).toBe(2)
    expect(demoNodeCount('4')).toBe(4)
    expect(demoNodeCount('8')).toBe(8)
    for (const bad of ['1', '9', '3.5', 'four', '-2', '1e1'])
      expect(demoNodeCount(bad), bad).toBe(
        `DEMO_NODES must be a whole number from 2 to 8 (got ${JSON.stringify(bad)}).`,
      )
  })

  it('DEMO_PLACEMENTS=two places the second model on node3 when there is one, else node2', () => {
    expect(demoPlacements(undefined, 4)).toEqual({ second: null })
    expect(demoPlacements('one', 4)).toEqual({ second: null })
    expect(demoPlacements('two', 2)).toEqual({ second: 'node2' })
    expect(demoPlacements('two', 3)).toEqual({ second: 'node3' })
    expect(demoPlacements('three', 3)).toMatch(/^DEMO_PLACEMENTS must be one or two/)
  })

  it('node3 and past hold every bundled model; the second model is on the node it is placed on', () => {
    const all = bundledRepos()
    const second = all.find((m) => m.key === DEMO_SECOND_KEY)
    expect(second?.mode).toBe('solo')
    const two = demoCachedModels()
    expect(Object.keys(two)).toEqual(['node1', 'node2'])
    expect(two.node2).not.toContain(second?.repo)
    for (const repo of DEMO_NODE1_ONLY) expect(two.node2).not.toContain(repo)
    const four = demoCachedModels(4, 'node2')
    expect(Object.keys(four)).toEqual(['node1', 'node2', 'node3', 'node4'])
    expect(four.node2).toContain(second?.repo)
    expect(four.node3).toEqual(all.map((m) => m.repo))
    expect(four.node4).toEqual(all.map((m) => m.repo))
  })
})
