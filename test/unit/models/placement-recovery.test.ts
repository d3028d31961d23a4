import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { FitEstimate } from '../../../src-main/contract/models'
import type { NodeName } from '../../../src-main/contract/schemas'
import { ManualClock } from '../../../src-main/lib/clock'
import { RESTART_LIMITS } from '../../../src-main/platform/restartLimits'
import {
  clusterIpOf,
  downRow,
  GB,
  okRow,
  placementRig,
  type FakeEngine,
  type RecordedCommand,
  type Rig,
  type RigOptions,
} from '../../helpers/placementRig'

/** Issue 47's "Bad input and faults": desired state, recovery, truthful stop and idle unloading, on the placement rig. */

const rigs: Rig[] = []
const temps: string[] = []
afterEach(async () => {
  // The newest first: an earlier rig owns the engines a later one reuses.
  for (const r of rigs.splice(0).reverse()) await r.close()
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

async function rig(opts: RigOptions = {}): Promise<Rig> {
  const r = await placementRig({ watchMs: 40, ...opts })
  rigs.push(r)
  return r
}

/** A restart: a new manager over the same DATA_DIR and the same engines (the models kept running). */
function restart(r: Rig, opts: RigOptions = {}): Promise<Rig> {
  return rig({ dataDir: r.dataDir, engines: r.engines, ...opts })
}

const launches = (r: Rig, node?: NodeName): RecordedCommand[] =>
  r.commands.filter((c) => c.kind === 'launch' && (node === undefined || c.node === node))

/** A reboot of a node: it stops answering, its engine's container is gone, then it answers again. */
function rebootDown(r: Rig, node: NodeName): void {
  r.hw[node] = downRow(node)
  const e = r.engines[node] as FakeEngine
  e.down()
  e.container = false
  r.placements.followHardware(r.snapshot())
}

function rebootUp(r: Rig, node: NodeName): void {
  r.hw[node] = okRow(node, clusterIpOf(node))
  r.placements.followHardware(r.snapshot())
}

/** The placements as the API shows them (with their recovery and keep). */
const view = async (r: Rig) => (await r.placements.placementsView()).placements
const recoveryOf = async (r: Rig, id = 'node3') => (await view(r)).find((p) => p.id === id)?.recovery

/** coder placed on node3, which reboots while coder now crashes on load: returns once the first attempt has failed. */
async function firstAttemptFailed(clock: ManualClock): Promise<Rig> {
  const r = await rig({ clock })
  await r.placed('coder', ['node3'])
  rebootDown(r, 'node3')
  r.failing.add('org/coder')
  rebootUp(r, 'node3')
  await vi.waitFor(async () => {
    await r.placements.reconcile()
    expect(launches(r, 'node3')).toHaveLength(2)
    expect(r.jobs.list('swap')[0]?.state).toBe('failed')
  })
  await r.placements.reconcile()
  return r
}

const intentFile = (r: Rig) => path.join(r.dataDir, 'placement-intent.json')
const intents = (r: Rig) =>
  (JSON.parse(fs.readFileSync(intentFile(r), 'utf8')) as { intents: { id: string; key: string; keep: unknown }[] })
    .intents

/** Each engine that serves something is listed by Tandem (nothing runs that it does not list). */
function everythingListed(r: Rig): void {
  for (const [node, e] of Object.entries(r.engines))
    if (e.served !== null) expect(r.placements.all().some((p) => p.head === node && p.served === e.served)).toBe(true)
}

describe('the intent', () => {
  it('is written before the job runs anything, with model, nodes, knobs and keep; stopping removes it', async () => {
    const r = await rig()
    let seen: unknown = null
    r.onCommand((c) => {
      if (c.kind === 'launch' && seen === null) seen = intents(r)
    })
    await r.placed('coder', ['node3'])
    expect(seen).toEqual([
      expect.objectContaining({
        id: 'node3',
        key: 'coder',
        nodes: ['node3'],
        knobs: {},
        keep: { pinned: true },
        origin: 'operator',
      }),
    ])
    const { job_id } = await r.placements.stopPlacement('node3')
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    expect(intents(r)).toEqual([])
  })
})

describe('a kill -9 of the daemon during a placement job', () => {
  const phases: { phase: string; at: Parameters<Rig['kill9']>[0]; relaunched: number }[] = [
    { phase: 'validating', at: 'validating', relaunched: 1 },
    { phase: 'stopping', at: (c) => c.kind === 'stop', relaunched: 1 },
    { phase: 'launching', at: (c) => c.kind === 'launch', relaunched: 1 },
    // The launch ran: the engine is loading when the daemon dies, and is adopted when it answers.
    { phase: 'loading', at: (c) => c.kind === 'tail', relaunched: 0 },
  ]
  for (const { phase, at, relaunched } of phases)
    it(`while ${phase}: the intent is known, the job's outcome reported, the engine adopted or relaunched, nothing unlisted runs`, async () => {
      const r = await rig({ loadDelayMs: 300 })
      await r.placed('coder', ['node3'])
      r.kill9(at)
      const { job_id } = await r.placements.place('big', ['node3'], { displace: true })
      await vi.waitFor(() => expect(r.dead()).toBe(true))
      const again = await restart(r, { loadDelayMs: 300 })
      // The acknowledged job answers, with the phase the restart ended it in.
      expect(again.jobs.get(job_id)).toMatchObject({
        state: 'failed',
        phase: phase,
        error: expect.stringContaining(`Tandem restarted while this job was ${phase}`),
      })
      expect(intents(again).map((i) => [i.id, i.key])).toEqual([['node3', 'big']])
      await vi.waitFor(
        async () => {
          await again.placements.reconcile()
          expect(again.placements.all().map((p) => [p.id, p.served, p.state])).toEqual([['node3', 'org/big', 'ready']])
        },
        { timeout: 5000, interval: 50 },
      )
      expect(launches(again)).toHaveLength(relaunched)
      everythingListed(again)
    })
})

describe('a node that reboots', () => {
  it('gets its placement back by itself once it answers, through the same placement job', async () => {
    const r = await rig()
    await r.placed('coder', ['node3'])
    rebootDown(r, 'node3')
    await r.placements.reconcile()
    expect((await recoveryOf(r))?.text).toBe('waiting: waiting for node3 to answer')
    expect(launches(r)).toHaveLength(1)
    rebootUp(r, 'node3')
    await vi.waitFor(() => expect(r.placements.all()[0]?.state).toBe('ready'))
    await r.placements.reconcile()
    expect(launches(r, 'node3')).toHaveLength(2)
    expect(await view(r)).toMatchObject([{ id: 'node3', served: 'org/coder', recovery: null }])
    const job = r.jobs.list('swap')[0]
    expect(job).toMatchObject({ state: 'succeeded', title: 'Place Coder on node3' })
    // The Cluster view's timeline marks it.
    expect(r.timeline).toEqual([
      {
        subject: 'placement node3',
        ok: true,
        source: 'recovery',
        detail: 'recovered coder on node3 (attempt 1 of 3)',
        error: null,
      },
    ])
  })

  it('again in the middle of its recovery: the attempt fails, and the next one after the cooldown brings it back', async () => {
    const clock = new ManualClock()
    const r = await rig({ clock, loadDelayMs: 300 })
    await r.placed('coder', ['node3'])
    rebootDown(r, 'node3')
    // Down again, once, while the relaunched engine loads (the job tails its log more than once; a
    // second reboot landing after the node is back would leave it down for the rest of the test).
    let downAgain = false
    r.onCommand((c) => {
      if (c.kind !== 'tail' || launches(r).length !== 2 || downAgain) return
      downAgain = true
      setTimeout(() => rebootDown(r, 'node3'), 20)
    })
    rebootUp(r, 'node3')
    await vi.waitFor(() => expect(r.jobs.list('swap')[0]?.state).toBe('failed'), { timeout: 5000 })
    r.onCommand(() => undefined)
    await r.placements.reconcile()
    expect((await recoveryOf(r))?.text).toBe('waiting: waiting for node3 to answer')
    rebootUp(r, 'node3')
    await r.placements.reconcile()
    const held = await recoveryOf(r)
    expect(held).toMatchObject({ state: 'recovering', attempt: 2, of: 3 })
    expect(held?.text).toMatch(/^recovering \(attempt 2 of 3, next at \d\d:\d\d:\d\d UTC\)$/)
    clock.advance(RESTART_LIMITS.cooldownMs)
    await vi.waitFor(
      async () => {
        await r.placements.reconcile()
        expect(await view(r)).toMatchObject([{ id: 'node3', state: 'ready', recovery: null }])
      },
      { timeout: 5000, interval: 50 },
    )
    expect(launches(r, 'node3')).toHaveLength(3)
  })
})

describe('an engine that crashes on a node that answers', () => {
  it('is seen at the next round (silent, its container gone) and brought back', async () => {
    const r = await rig()
    await r.placed('coder', ['node3'])
    const e = r.engines.node3 as FakeEngine
    e.down()
    e.container = false
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect(launches(r, 'node3')).toHaveLength(2)
      expect(r.placements.all()).toMatchObject([{ id: 'node3', state: 'ready', served: 'org/coder' }])
    })
  })

  it('is left alone while its container still runs (loading, or answering again soon)', async () => {
    const r = await rig()
    await r.placed('coder', ['node3'])
    ;(r.engines.node3 as FakeEngine).down()
    ;(r.engines.node3 as FakeEngine).container = true
    await r.placements.reconcile()
    expect(launches(r, 'node3')).toHaveLength(1)
  })
})

describe('two nodes returning at once', () => {
  it('with placements that no longer fit together: the larger first, the other waits with the reason', async () => {
    const r = await rig()
    await r.placed('big', ['node3'])
    await r.placed('coder', ['node4'])
    const need = { big: 100 * GB, coder: 90 * GB }
    r.deps.estimate = async (key: string, nodes: readonly NodeName[]): Promise<FitEstimate> => {
      const bytes = need[key as keyof typeof need] ?? 0
      // Once big runs, node4 no longer has room for coder (memory they share, in the fake's terms).
      const fits = key !== 'coder' || !r.placements.all().some((p) => p.key === 'big' && p.state === 'ready')
      return {
        mode: 'solo',
        verdict: fits ? 'fits' : 'no_fit',
        notes: [],
        nodes: nodes.map((node) => ({
          node,
          weights_bytes: bytes,
          kv_cache_bytes: 0,
          need_bytes: bytes,
          budget_bytes: 80 * GB,
          ram_total_bytes: 128 * GB,
          other_bytes: null,
          verdict: fits ? 'fits' : 'no_fit',
        })),
      }
    }
    rebootDown(r, 'node3')
    rebootDown(r, 'node4')
    await r.placements.reconcile()
    r.commands.length = 0
    r.hw.node3 = okRow('node3', clusterIpOf('node3'))
    r.hw.node4 = okRow('node4', clusterIpOf('node4'))
    r.placements.followHardware(r.snapshot())
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect((await recoveryOf(r, 'node4'))?.text).toBe(
        'waiting: it does not fit node4 now (needs 90.0 GB of a 80.0 GB budget)',
      )
    })
    expect(launches(r).map((c) => c.node)).toEqual(['node3'])
    expect(r.placements.all().find((p) => p.id === 'node3')).toMatchObject({ state: 'ready', served: 'org/big' })
  })
})

describe('a model that crashes on every load', () => {
  it('is tried at most 3 times in 30 min, then reads failed with its last error; Retry starts over', async () => {
    const clock = new ManualClock()
    const r = await firstAttemptFailed(clock)
    clock.advance(RESTART_LIMITS.cooldownMs)
    for (let attempt = 2; attempt <= 3; attempt++) {
      await vi.waitFor(async () => {
        await r.placements.reconcile()
        expect(launches(r, 'node3')).toHaveLength(1 + attempt)
        expect(r.jobs.list('swap')[0]?.state).toBe('failed')
      })
      clock.advance(RESTART_LIMITS.cooldownMs)
    }
    await r.placements.reconcile()
    const failed = await recoveryOf(r)
    expect(failed).toMatchObject({ state: 'failed', attempt: 3, of: 3 })
    expect(failed?.text).toMatch(/^failed: placing Coder on node3 failed: .*EngineCore failed to start/)
    clock.advance(RESTART_LIMITS.windowMs)
    await r.placements.reconcile()
    expect(launches(r, 'node3')).toHaveLength(4)
    // The operator fixed it and presses Retry.
    r.failing.delete('org/coder')
    await r.placements.retry('node3')
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect(await view(r)).toMatchObject([{ id: 'node3', state: 'ready', recovery: null }])
    })
    expect(launches(r, 'node3')).toHaveLength(5)
  })
})

describe('the operator stopping a placement while it recovers', () => {
  it('wins: its intent goes and nothing is relaunched', async () => {
    const clock = new ManualClock()
    const r = await firstAttemptFailed(clock)
    expect((await recoveryOf(r))?.state).toBe('recovering')
    const { job_id } = await r.placements.stopPlacement('node3')
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    r.failing.delete('org/coder')
    clock.advance(RESTART_LIMITS.windowMs)
    await r.placements.reconcile()
    expect(launches(r, 'node3')).toHaveLength(2)
    expect(r.placements.all()).toEqual([])
    expect(intents(r)).toEqual([])
  })
})

describe('Tandem restarted during a recovery', () => {
  it('keeps the attempts counted: the next one is due when it was, not at once', async () => {
    const clock = new ManualClock()
    const r = await firstAttemptFailed(clock)
    const before = await recoveryOf(r)
    expect(before?.state).toBe('recovering')
    const again = await restart(r, { clock })
    again.failing.add('org/coder')
    await again.placements.reconcile()
    expect(await recoveryOf(again)).toMatchObject({ state: 'recovering', attempt: 2, next_at: before?.next_at })
    expect(launches(again)).toEqual([])
  })
})

describe('the intent file', () => {
  it('with an entry for a node no longer configured, and a malformed one: each reported and skipped, the rest recovered', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-intent-'))
    temps.push(dataDir)
    const intent = (id: string, key: string) => ({
      id,
      key,
      nodes: [id],
      keep: { pinned: true },
      origin: 'operator',
      since: 1,
    })
    fs.writeFileSync(
      path.join(dataDir, 'placement-intent.json'),
      JSON.stringify({ intents: [intent('node9', 'big'), { id: 'node3', key: 5 }, intent('node4', 'coder')] }),
    )
    const r = await rig({ dataDir })
    const file = path.join(dataDir, 'placement-intent.json')
    expect(r.placements.intentProblems()).toEqual([
      `placement intent file ${file}: big on node9 names node9, which is not configured; skipped`,
      expect.stringMatching(/: entry 2 is malformed \(.*key.*\); skipped$/s),
    ])
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect(r.placements.all().map((p) => [p.id, p.served, p.state])).toEqual([['node4', 'org/coder', 'ready']])
    })
    expect(launches(r).map((c) => c.node)).toEqual(['node4'])
  })
})

describe('a container started by hand', () => {
  it('is adopted as found and never stopped or relaunched', async () => {
    const r = await rig()
    ;(r.engines.node4 as FakeEngine).serveAfter('org/coder', 0)
    await vi.waitFor(() => expect(r.placements.all().map((p) => [p.id, p.served])).toEqual([['node4', 'org/coder']]))
    await r.placements.reconcile()
    expect(r.ran()).toEqual([])
    expect((await view(r))[0]).toMatchObject({ recovery: null, keep: null })
  })
})

describe('recovery turned off', () => {
  it('leaves a placement lost after a reboot (PLACEMENT_RECOVERY=off)', async () => {
    const r = await rig({ env: { PLACEMENT_RECOVERY: 'off' } })
    await r.placed('coder', ['node3'])
    rebootDown(r, 'node3')
    rebootUp(r, 'node3')
    await r.placements.reconcile()
    await r.placements.reconcile()
    expect(launches(r)).toHaveLength(1)
    expect(await view(r)).toMatchObject([{ id: 'node3', state: 'lost', recovery: null }])
  })
})

describe('idle unloading', () => {
  it('keeps a placement with a request open past its ttl, and unloads it (intent dropped) once idle', async () => {
    const clock = new ManualClock()
    let busy = true
    const r = await rig({ clock, isBusy: (id) => busy && id === 'node3' })
    const { job_id } = await r.placements.placeKept('coder', ['node3'], { ttlMin: 5 })
    expect((await r.jobs.wait(job_id)).state).toBe('succeeded')
    expect(intents(r)[0]?.keep).toEqual({ ttl_min: 5 })
    r.commands.length = 0
    await r.placements.admit('org/coder', new AbortController().signal)
    clock.advance(6 * 60_000)
    await r.placements.reconcile()
    expect(r.ran().filter((c) => c.kind === 'stop')).toEqual([])
    busy = false
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect(r.placements.all()).toEqual([])
    })
    expect(intents(r)).toEqual([])
  })

  it('never unloads what the operator placed (pinned by default)', async () => {
    const clock = new ManualClock()
    const r = await rig({ clock })
    await r.placed('coder', ['node3'])
    clock.advance(24 * 60 * 60_000)
    await r.placements.reconcile()
    expect(await view(r)).toMatchObject([{ id: 'node3', state: 'ready', keep: { pinned: true, ttl_min: null } }])
  })

  it("keeps an operator's placement for its catalog entry's own idle ttl when the request names none", async () => {
    const clock = new ManualClock()
    const r = await rig({ clock, catalogKeep: { coder: { ttl_min: 7 } } })
    await r.placed('coder', ['node3'])
    expect(intents(r)[0]?.keep).toEqual({ ttl_min: 7 })
    clock.advance(8 * 60_000)
    await vi.waitFor(async () => {
      await r.placements.reconcile()
      expect(r.placements.all()).toEqual([])
    })
  })

  it('keeps an on-demand swap pinned when its catalog entry says pinned', async () => {
    const r = await rig({
      env: { SWAP_ON_DEMAND: 'on', PLACEMENT_IDLE_TTL_MIN: '12' },
      catalogKeep: { coder: { pinned: true } },
    })
    await r.placements.admit('coder', new AbortController().signal)
    expect(intents(r)).toEqual([expect.objectContaining({ id: 'node1', key: 'coder', keep: { pinned: true } })])
  })

  it("gives what on-demand swap placed the setting's ttl", async () => {
    const r = await rig({ env: { SWAP_ON_DEMAND: 'on', PLACEMENT_IDLE_TTL_MIN: '12' } })
    await r.placements.admit('coder', new AbortController().signal)
    expect(intents(r)).toEqual([
      expect.objectContaining({ id: 'node1', key: 'coder', keep: { ttl_min: 12 }, origin: 'on_demand' }),
    ])
  })
})
