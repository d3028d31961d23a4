import { describe, expect, it } from 'vitest'
import { swapPhaseTitles } from '../../../scripts/contractDataForTests'
import {
  failedStep,
  measuredDeadline,
  serverOffset,
  swapEta,
  uptimeSeconds,
  WEIGHTS_READ_BYTES_PER_S,
} from '../../../src-renderer/stores/swapTiming'
import { downloadOutcome, repoInCatalog } from '../../../src-renderer/stores/downloadResult'

const GB = 1e9

describe('swap timing: uptime and the server clock', () => {
  it('never counts uptime below zero, whichever clock runs ahead', () => {
    // The model came up 17 s "after" the client's now: the server clock is ahead.
    expect(uptimeSeconds(1_017_000, 1_000_000, null)).toBe(0)
    expect(uptimeSeconds(null, 1_000_000, 0)).toBeNull()
  })

  it("counts from the server's `since` on the server's clock, via the offset from events' stamps", () => {
    // Server 17 s ahead of the client: an event stamped 1_017_000 arrives at client 1_000_000.
    const offset = serverOffset(null, 1_017_000, 1_000_000)
    expect(offset).toBe(17_000)
    expect(uptimeSeconds(1_010_000, 1_000_000, offset)).toBe(7)
  })

  it('keeps the closest offset: a replayed old event cannot pull it back', () => {
    const live = serverOffset(null, 1_017_000, 1_000_000)
    expect(serverOffset(live, 900_000, 1_001_000)).toBe(17_000)
    expect(serverOffset(live, 1_019_500, 1_002_000)).toBe(17_500)
  })
})

describe('swap timing: the ETA', () => {
  const swapping = { key: 'm', layout: { tensor_parallel: 1 } }
  const job = { id: 'swap-1', started_at: 1_000_000 }

  it("counts the daemon's measured ETA down with the client clock", () => {
    const deadline = measuredDeadline('swap-1', 9, 2_000_000)
    const at = (clientNow: number) =>
      swapEta({ swapping, job, followedJobId: null, deadline, weightsBytes: null, offsetMs: 0, clientNow })
    expect(at(2_000_000)).toEqual({ seconds: 9, estimate: false })
    expect(at(2_003_000)).toEqual({ seconds: 6, estimate: false })
    expect(at(2_020_000)).toEqual({ seconds: 0, estimate: false })
  })

  it("estimates a first load from the weights' size at the read rate, split over tensor-parallel nodes", () => {
    const weights = 40 * GB
    const full = (weights / WEIGHTS_READ_BYTES_PER_S) * 1000
    const solo = swapEta({
      swapping,
      job,
      followedJobId: null,
      deadline: null,
      weightsBytes: weights,
      offsetMs: 0,
      clientNow: 1_000_000,
    })
    expect(solo).toEqual({ seconds: Math.ceil(full / 1000), estimate: true })
    const split = swapEta({
      swapping: { key: 'm', layout: { tensor_parallel: 2 } },
      job,
      followedJobId: null,
      deadline: null,
      weightsBytes: weights,
      offsetMs: 0,
      clientNow: 1_000_000,
    })
    expect(split?.seconds).toBe(Math.ceil(full / 2000))
    // Counted from the job's start on the server clock: a reload later shows less left.
    const later = swapEta({
      swapping,
      job,
      followedJobId: null,
      deadline: null,
      weightsBytes: weights,
      offsetMs: 0,
      clientNow: 1_005_000,
    })
    expect(later?.seconds).toBe(Math.ceil(full / 1000) - 5)
  })

  it("ignores another job's ETA and shows none without a swap", () => {
    const deadline = measuredDeadline('swap-0', 9, 1_000_000)
    const base = { job, followedJobId: null, deadline, weightsBytes: null, offsetMs: 0, clientNow: 1_000_000 }
    expect(swapEta({ ...base, swapping })).toBeNull()
    expect(swapEta({ ...base, swapping: null, deadline: measuredDeadline('swap-1', 9, 1_000_000) })).toBeNull()
  })
})

describe('swap timing: the step a swap failed in', () => {
  it('is the last step before it turned to rolling back or failed', () => {
    const t = swapPhaseTitles
    expect(failedStep([t.validating, t.stopping, t.launching, t.loading, t.failed], t)).toBe('loading')
    // The rollback relaunches the previous model through launching and loading again: still "launching".
    expect(
      failedStep([t.validating, t.stopping, t.launching, t.rolling_back, t.launching, t.loading, t.failed], t),
    ).toBe('launching')
    expect(failedStep(['Starting', t.validating, t.failed], t)).toBe('validating')
    expect(failedStep([t.validating, t.loading, t.ready], t)).toBeNull()
  })
})

describe('download result', () => {
  const record = {
    id: 'download-1',
    kind: 'download' as const,
    title: 'Download org/x to node1 and node2',
    state: 'succeeded' as const,
    phase: 'Done',
    started_at: 1_000_000,
    finished_at: 1_050_000,
    elapsed_s: 50,
    progress: { percent: 100, bytes_done: 10 * GB, bytes_total: 10 * GB, rate: 5e6, eta_s: 0 },
    log: [],
    result: { repo: 'org/x', target: 'both', nodes: ['node1', 'node2'] },
    error: null,
  }

  it('names the repo, nodes, size, time and average rate of a finished download', () => {
    expect(downloadOutcome(record)).toEqual({
      id: 'download-1',
      state: 'succeeded',
      repo: 'org/x',
      nodes: ['node1', 'node2'],
      bytes: 10 * GB,
      duration_s: 50,
      rate: (10 * GB) / 50,
      error: null,
    })
    expect(downloadOutcome({ ...record, state: 'running', finished_at: null })).toBeNull()
  })

  it('a failed one still names its repo from the title, with its error and no made-up figures', () => {
    const out = downloadOutcome({ ...record, state: 'failed', result: null, progress: null, error: 'hub down' })
    expect(out).toMatchObject({ repo: 'org/x', nodes: [], bytes: null, rate: null, error: 'hub down' })
  })

  it('knows a repo the catalog already has, whatever its case', () => {
    expect(repoInCatalog([{ repo: 'Qwen/Qwen3-8B' }, {}], 'qwen/qwen3-8b')).toBe(true)
    expect(repoInCatalog([{ repo: 'Qwen/Qwen3-8B' }], 'Qwen/Qwen3-14B')).toBe(false)
  })
})
