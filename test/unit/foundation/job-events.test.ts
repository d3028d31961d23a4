import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import { Redactor } from '../../../src-main/lib/logger'
import { JobRegistry } from '../../../src-main/platform/jobs'
import type { PushEvent } from '../../../src-main/contract/events'

/** Everything published, read back from the bus's buffer. */
async function published(bus: EventBus): Promise<PushEvent[]> {
  const out: PushEvent[] = []
  const stream = bus.stream(0, new AbortController().signal)
  while (out.length < bus.lastSeq) out.push((await stream.next()).value as PushEvent)
  await stream.return(undefined)
  return out
}

describe('job updates on the event bus', () => {
  it('publishes start, phase, progress (at most once a second) and end, but not log lines', async () => {
    const clock = new ManualClock()
    const bus = new EventBus(clock)
    const jobs = new JobRegistry(clock, new Redactor(), bus)
    const rec = jobs.start('download', 'org/model', async (job) => {
      job.phase('Downloading')
      job.log('line one')
      job.progress({ percent: 10 }) // within a second of the last update: folded into the next one
      clock.advance(999)
      job.progress({ percent: 11 })
      clock.advance(1)
      job.progress({ percent: 50 })
    })
    await jobs.wait(rec.id)
    const updates = (await published(bus)).filter((e) => e.name === 'job.update')
    expect(updates.map((e) => e.data.id)).toEqual(Array(updates.length).fill(rec.id))
    expect(updates.map((e) => [e.data.state, e.data.phase, e.data.progress?.percent ?? null])).toEqual([
      ['running', 'Starting', null],
      ['running', 'Downloading', null],
      ['running', 'Downloading', 50],
      ['succeeded', 'Done', 50],
    ])
    expect(JSON.stringify(updates)).not.toContain('line one')
  })

  it('publishes a failed end with its (redacted) error', async () => {
    const clock = new ManualClock()
    const bus = new EventBus(clock)
    const r = new Redactor()
    r.add('hf_secret_token_123')
    const jobs = new JobRegistry(clock, r, bus)
    const rec = jobs.start('update', 'launcher', async () => {
      throw new Error('auth failed for hf_secret_token_123')
    })
    await jobs.wait(rec.id)
    const last = (await published(bus)).at(-1)
    expect(last).toMatchObject({ name: 'job.update', data: { state: 'failed' } })
    expect(JSON.stringify(last)).not.toContain('hf_secret_token_123')
  })
})
