// @vitest-environment happy-dom
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { initBackend, type BackendApi, type OutputOf } from '../../../src-renderer/api'
import { usePlacementsStore } from '../../../src-renderer/stores/placements'
import type { PlacementsView } from '../../../src-main/contract/placements'
import { swapJobRecord } from './fixtures'

// Issue 40: one store for what runs where; a swap is the placement job on node1.

const T = Date.now()
const swapJob = (over: Record<string, unknown> = {}): NonNullable<PlacementsView['job']> =>
  swapJobRecord(T, { id: 'swap-3', title: 'Swap to Coder (solo)', ...over }) as NonNullable<PlacementsView['job']>
const placing: PlacementsView = {
  placements: [],
  nodes: [
    { name: 'node1', placement_id: null, reachable: true, launcher: true, ram_total_bytes: 1e11, other_bytes: 0 },
  ],
  changing: {
    id: 'node1',
    key: 'coder',
    action: 'place',
    phase: 'loading',
    displaces: [],
    eta_s: 30,
    job_id: 'swap-3',
  },
  job: swapJob(),
}
const swapping: OutputOf<'swapState'> = {
  loaded: null,
  job: swapJob(),
  swapping: { key: 'coder', mode: 'solo', phase: 'loading', eta_s: 30, layout: null },
}

type Sub = { method: string; input: unknown; onEvent: (e: unknown) => void }

/** A daemon mid-swap on node1: GET /api/placements and GET /api/swap tell the same job. */
function midSwap(subs: Sub[]): BackendApi {
  const answers: Record<string, unknown> = {
    listPlacements: placing,
    swapState: swapping,
    listModels: [],
    diskStatus: { models: [], checked_at: T },
  }
  return {
    transport: 'http',
    call: (async (method: string) => {
      if (!(method in answers)) throw new Error(`${method} not needed here`)
      return structuredClone(answers[method])
    }) as BackendApi['call'],
    subscribe: ((method: string, input: unknown, h: { onEvent: Sub['onEvent'] }) => {
      subs.push({ method, input, onEvent: h.onEvent })
      return () => undefined
    }) as BackendApi['subscribe'],
  }
}

describe('one store for what runs where', () => {
  it("holds node1's swap beside the placements, and applies the swap job's update to both", async () => {
    const subs: Sub[] = []
    initBackend(() => undefined, midSwap(subs))
    setActivePinia(createPinia())
    const store = usePlacementsStore()
    store.follow()
    await store.refresh()
    expect(store.view?.changing?.id).toBe('node1')
    expect(store.swapView?.swapping?.key).toBe('coder')
    // The swap's log comes through its job's own stream, followed by the same store.
    expect(subs.find((s) => s.method === 'streamJob')?.input).toEqual({ id: 'swap-3' })

    const update = { ...swapJob({ phase: 'Ready', state: 'succeeded', finished_at: T + 5000 }), log: undefined }
    subs.find((s) => s.method === 'streamEvents')!.onEvent({ seq: 1, at: T, name: 'job.update', data: update })
    expect(store.view?.job?.phase).toBe('Ready')
    expect(store.swapView?.job?.phase).toBe('Ready')
    expect(store.swapView?.job?.finished_at).toBe(T + 5000)
    store.unfollow()
  })

  it('has one store that applies job.update events, the placements store', () => {
    const dir = path.resolve(__dirname, '../../../src-renderer/stores')
    const applying = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => readFileSync(path.join(dir, f), 'utf8').includes("case 'job.update'"))
    expect(applying).toEqual(['placements.ts'])
  })
})
