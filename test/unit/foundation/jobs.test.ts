import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { Redactor } from '../../../src-main/lib/logger'
import { ApiError } from '../../../src-main/contract/errors'
import { JobRegistry } from '../../../src-main/platform/jobs'
import type { JobEvent } from '../../../src-main/contract/system'

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void
  const wait = new Promise<void>((r) => (open = r))
  return { wait, open }
}

async function collect(it: AsyncIterable<JobEvent>): Promise<JobEvent[]> {
  const out: JobEvent[] = []
  for await (const e of it) out.push(e)
  return out
}

describe('job registry', () => {
  it('runs one job per kind and names the running one in the refusal', async () => {
    const jobs = new JobRegistry(new ManualClock(), new Redactor())
    const g = gate()
    const first = jobs.start('download', 'org/model', async () => g.wait)
    let refusal: unknown
    try {
      jobs.start('download', 'other', async () => undefined)
    } catch (err) {
      refusal = err
    }
    expect(refusal).toBeInstanceOf(ApiError)
    expect((refusal as ApiError).status).toBe(409)
    expect((refusal as ApiError).message).toContain(first.id)
    // Another kind is not blocked.
    const other = jobs.start('update', 'launcher', async () => 'ok')
    expect((await jobs.wait(other.id)).state).toBe('succeeded')
    g.open()
    expect((await jobs.wait(first.id)).state).toBe('succeeded')
    // The kind is free again.
    const again = jobs.start('download', 'next', async () => 1)
    expect((await jobs.wait(again.id)).result).toBe(1)
  })

  it('records phases, progress, elapsed time, result and failure', async () => {
    const clock = new ManualClock(1_000_000)
    const jobs = new JobRegistry(clock, new Redactor())
    const rec = jobs.start('download', 'm', async (job) => {
      job.phase('Downloading')
      job.progress({ percent: 50, bytes_done: 5, bytes_total: 10 })
      clock.advance(2500)
      job.progress({ rate: 2 })
      return { path: '/x' }
    })
    const done = await jobs.wait(rec.id)
    expect(done.state).toBe('succeeded')
    expect(done.phase).toBe('Done')
    expect(done.elapsed_s).toBe(2.5)
    expect(done.progress).toEqual({ percent: 50, bytes_done: 5, bytes_total: 10, rate: 2, eta_s: null })
    expect(done.result).toEqual({ path: '/x' })
    const failed = jobs.start('update', 'u', async () => {
      throw new Error('git pull failed: not fast-forward')
    })
    const f = await jobs.wait(failed.id)
    expect(f.state).toBe('failed')
    expect(f.error).toContain('not fast-forward')
  })

  it('replays missed events to a late viewer, then follows live until the end', async () => {
    const jobs = new JobRegistry(new ManualClock(), new Redactor())
    const g = gate()
    const rec = jobs.start('swap', 's', async (job) => {
      job.phase('Stopping')
      job.log('line one')
      await g.wait
      job.log('line two')
    })
    await new Promise((r) => setImmediate(r))
    const stream = collect(jobs.events(rec.id))
    g.open()
    const events = await stream
    expect(events.map((e) => e.type)).toEqual(['phase', 'log', 'log', 'end'])
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4])
    // Resuming after seq 2 gives only what came later.
    const resumed = await collect(jobs.events(rec.id, 2))
    expect(resumed.map((e) => e.seq)).toEqual([3, 4])
  })

  it('keeps running when the viewer goes away', async () => {
    const jobs = new JobRegistry(new ManualClock(), new Redactor())
    const g = gate()
    const rec = jobs.start('prebuilt', 'p', async (job) => {
      job.log('a')
      await g.wait
      job.log('b')
      return 'done'
    })
    const viewer = new AbortController()
    const iter = jobs.events(rec.id, 0, viewer.signal)[Symbol.asyncIterator]()
    expect((await iter.next()).value).toMatchObject({ type: 'log', line: 'a' })
    const pending = iter.next()
    viewer.abort()
    expect((await pending).done).toBe(true)
    g.open()
    const done = await jobs.wait(rec.id)
    expect(done.state).toBe('succeeded')
    expect(done.log).toEqual(['a', 'b'])
  })

  it('cancels through the job signal', async () => {
    const jobs = new JobRegistry(new ManualClock(), new Redactor())
    const rec = jobs.start(
      'download',
      'd',
      (job) => new Promise((_res, rej) => job.signal.addEventListener('abort', () => rej(new Error('stopped')))),
    )
    jobs.cancel(rec.id)
    expect((await jobs.wait(rec.id)).state).toBe('cancelled')
  })

  it('redacts secrets from log lines and bounds the log', async () => {
    const r = new Redactor()
    r.add('nvapi-abcdef123456')
    const jobs = new JobRegistry(new ManualClock(), r)
    const rec = jobs.start('prebuilt', 'p', async (job) => {
      job.log('login with nvapi-abcdef123456')
      for (let i = 0; i < 3000; i++) job.log(`line ${i}`)
    })
    await jobs.wait(rec.id)
    const all = await collect(jobs.events(rec.id))
    expect(all.some((e) => e.type === 'log' && e.line.includes('nvapi-abcdef123456'))).toBe(false)
    const snap = jobs.get(rec.id)
    expect(snap.log).toHaveLength(200)
    expect(snap.log.at(-1)).toBe('line 2999')
  })

  it('answers 404 for an unknown job', () => {
    const jobs = new JobRegistry(new ManualClock(), new Redactor())
    expect(() => jobs.get('nope')).toThrow(/no job/)
  })
})
