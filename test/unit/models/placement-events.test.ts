import { afterEach, describe, expect, it } from 'vitest'
import { downRow, placementRig, type PublishedEvent, type Rig } from '../../helpers/placementRig'

/**
 * One event for what runs where (issue 40, item 4): `placements.changed` carries the whole view and
 * the job's step that changed it; `swap.state` carries the same step alone, an alias kept for one release.
 */

const rigs: Rig[] = []
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.close()
})

async function settled(r: Rig): Promise<void> {
  // The view is published after the hardware is read: let those reads finish.
  for (let i = 0; i < 20; i++) await new Promise((done) => setImmediate(done))
  expect(r.placements.busy()).toBe(false)
}

describe('the placement event', () => {
  it('carries each phase of a placement job with the view it leaves, the alias the same phases', async () => {
    const r = await placementRig()
    rigs.push(r)
    const from = r.published.length
    await r.placed('coder', ['node3'])
    await settled(r)
    const events = r.published.slice(from)
    const steps = events.flatMap((e) => (e.name === 'placements.changed' && e.data.step ? [e.data.step] : []))
    // node3 is free: nothing stops, so no stopping phase (issue 46, item 7).
    expect(steps.map((s) => s.phase)).toEqual(['validating', 'launching', 'loading', 'ready'])
    expect(steps.every((s) => s.key === 'coder' && s.placement_id === 'node3')).toBe(true)
    const alias = events.flatMap((e) => (e.name === 'swap.state' ? [e.data] : []))
    expect(alias).toEqual(steps)
    const last = events.filter((e) => e.name === 'placements.changed').at(-1)
    expect(last?.name === 'placements.changed' && last.data.placements.map((p) => p.id)).toEqual(['node3'])
    expect(last?.name === 'placements.changed' && last.data.step).toBeNull()
  })

  it('is published without a step when nothing but the view changed (a node lost)', async () => {
    const r = await placementRig()
    rigs.push(r)
    await r.placed('coder', ['node3'])
    await settled(r)
    const from = r.published.length
    r.hw.node3 = downRow('node3')
    r.placements.followHardware(r.snapshot())
    await settled(r)
    const changed = r.published.slice(from).filter((e) => e.name === 'placements.changed')
    // The node lost, then the reconciler's word on it (issue 47): views only, no job step.
    expect(changed).toHaveLength(2)
    for (const e of changed) expect(e.name === 'placements.changed' && e.data.step).toBeNull()
    const last = changed[1]
    expect(last?.name === 'placements.changed' && last.data.placements[0]?.recovery?.text).toBe(
      'waiting: waiting for node3 to answer',
    )
  })

  it('carries the steps in the order the job made them when the first view is read slower', async () => {
    const r = await placementRig()
    rigs.push(r)
    const from = r.published.length
    // Holds back the first two view reads of the job (its first step's among them) until released.
    let release = (): void => undefined
    const gate = new Promise<void>((done) => (release = done))
    const held = holdFirstReads(r, from, gate)
    await r.placed('coder', ['node3'])
    release()
    await settled(r)
    expect(held()).toBe(2)
    expect(stepsOf(r.published.slice(from)).map((s) => s.phase)).toEqual(PHASES)
  })

  it('sends a step whose view cannot be read in its turn, without the hardware, and the later ones after it', async () => {
    const r = await placementRig({ viewWaitMs: 20 })
    rigs.push(r)
    const from = r.published.length
    // The first two view reads of the job never answer.
    const held = holdFirstReads(r, from, new Promise<never>(() => undefined))
    await r.placed('coder', ['node3'])
    for (let i = 0; i < 500 && stepsOf(r.published.slice(from)).length < PHASES.length; i++)
      await new Promise((done) => setTimeout(done, 10))
    const changed = r.published.slice(from).filter((e) => e.name === 'placements.changed')
    expect(stepsOf(changed).map((s) => s.phase)).toEqual(PHASES)
    expect(held()).toBe(2)
    // Without the hardware a node's RAM is unknown: the two views went out so; the views after them read it again.
    const unread = changed.filter((e) => e.name === 'placements.changed' && e.data.nodes[0]?.ram_total_bytes === null)
    expect(unread).toHaveLength(2)
    expect(changed.at(-1)?.name === 'placements.changed' && changed.at(-1)?.data).toMatchObject({
      nodes: r.names.map(() => ({ ram_total_bytes: expect.any(Number) })),
    })
  })
})

const PHASES = ['validating', 'launching', 'loading', 'ready']

/** The job steps `placements.changed` carried, in order. */
function stepsOf(events: readonly PublishedEvent[]) {
  return events.flatMap((e) => (e.name === 'placements.changed' && e.data.step ? [e.data.step] : []))
}

/** Holds the first two hardware reads after the job's first step on `gate`; returns how many it held. */
function holdFirstReads(r: Rig, from: number, gate: Promise<void>): () => number {
  let held = 0
  r.beforeHardware(async () => {
    if (held >= 2 || !r.published.slice(from).some((e) => e.name === 'swap.state')) return
    held += 1
    await gate
  })
  return () => held
}
