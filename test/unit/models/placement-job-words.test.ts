import { afterEach, describe, expect, it } from 'vitest'
import { placementRig, type PublishedEvent, type Rig } from '../../helpers/placementRig'

/**
 * What a placement job says it did (issue 46, item 7): a job on free nodes is a placement ("Place …
 * on node3") with no stopping phase, since nothing was stopped; a job that stops a placement to run
 * its own is a swap and lists the stop, and its steps name what it replaces.
 */

const rigs: Rig[] = []
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.close()
})

async function settled(r: Rig): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((done) => setImmediate(done))
  expect(r.placements.busy()).toBe(false)
}

function stepsOf(events: readonly PublishedEvent[]) {
  return events.flatMap((e) => (e.name === 'placements.changed' && e.data.step ? [e.data.step] : []))
}

/** The phases the job's own stream carried, in order. */
async function jobPhases(r: Rig, id: string): Promise<string[]> {
  const phases: string[] = []
  for await (const ev of r.jobs.events(id)) if (ev.type === 'phase') phases.push(ev.phase)
  return phases
}

describe("a placement job's title and phases", () => {
  it('on a free node: "Place … on node3", and only the phases that ran (no stopping)', async () => {
    const r = await placementRig()
    rigs.push(r)
    const from = r.published.length
    const { job_id } = await r.placements.place('coder', ['node3'])
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    await settled(r)
    const steps = stepsOf(r.published.slice(from))
    expect(steps.map((s) => s.phase)).toEqual(['validating', 'launching', 'loading', 'ready'])
    expect(steps.every((s) => s.replaces.length === 0)).toBe(true)
    expect(r.jobs.get(job_id).title).toBe('Place Coder on node3')
    expect(await jobPhases(r, job_id)).toEqual(['Validating', 'Launching', 'Loading', 'Ready'])
  })

  it('the spec swap onto a free node1 is a placement too: "Place … on node1", no stopping', async () => {
    const r = await placementRig()
    rigs.push(r)
    expect(r.placements.all().filter((p) => p.nodes.includes('node1'))).toEqual([])
    const { job_id } = await r.placements.begin('coder', 'solo')
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    expect(r.jobs.get(job_id).title).toBe('Place Coder on node1')
    expect(await jobPhases(r, job_id)).not.toContain('Stopping the current engine')
  })

  it('replacing a placement is a swap: the stop is listed and the steps name what it replaces', async () => {
    const r = await placementRig()
    rigs.push(r)
    await r.placed('coder', ['node1'])
    await settled(r)
    const from = r.published.length
    const { job_id } = await r.placements.begin('tiny', 'solo')
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    await settled(r)
    const steps = stepsOf(r.published.slice(from))
    expect(steps.map((s) => s.phase)).toEqual(['validating', 'stopping', 'launching', 'loading', 'ready'])
    expect(steps.every((s) => s.replaces.join() === 'node1')).toBe(true)
    expect(r.jobs.get(job_id).title).toMatch(/^Swap to .+ \(solo on node1\)$/)
    expect(await jobPhases(r, job_id)).toContain('Stopping the current engine')
  })
})
