// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { initBackend, type BackendApi, type OutputOf } from '../../../src-renderer/api'
import { button, buttons, flush, mountWith, stubCanvas, unmountAll } from './mount'
import { hardwareRow, swapJobRecord } from './fixtures'
import { placementStep } from '../../helpers/placementStep'
import { usePlacementsStore } from '../../../src-renderer/stores/placements'
import { placeChoices } from '../../../src-renderer/components/models/placeChoices'
import ClusterView from '../../../src-renderer/views/ClusterView.vue'
import PlaceDialog from '../../../src-renderer/components/models/PlaceDialog.vue'
import ModelsView from '../../../src-renderer/views/ModelsView.vue'
import type { PlacementsView } from '../../../src-main/contract/placements'

const T = Date.now()
const GB = 1e9

const qwen = {
  id: 'node1',
  key: 'qwen3-32b-fp8',
  served: 'Qwen/Qwen3-32B-FP8',
  nodes: ['node1'],
  head: 'node1',
  layout: null,
  state: 'ready' as const,
  reason: null,
  since: T - 60_000,
  memory_bytes_per_node: 97 * GB,
}
const coder = {
  ...qwen,
  id: 'node2',
  key: 'coder',
  served: 'org/coder',
  nodes: ['node2'],
  head: 'node2',
}
const node = (name: string, over: Partial<PlacementsView['nodes'][number]> = {}) => ({
  name,
  placement_id: null,
  reachable: true,
  launcher: true,
  ram_total_bytes: 128 * GB,
  other_bytes: 0,
  ...over,
})

/** node1 runs Qwen; node2 is free with the speech services on it; node3 is down; node4 has no launcher. */
function startView(): PlacementsView {
  return {
    placements: [qwen],
    nodes: [
      node('node1', { placement_id: 'node1' }),
      node('node2', { other_bytes: 12 * GB }),
      node('node3', { reachable: false, launcher: null }),
      node('node4', { launcher: false }),
    ],
    changing: null,
    job: null,
  }
}
const job = (over: Record<string, unknown> = {}): NonNullable<PlacementsView['job']> =>
  swapJobRecord(T, over) as NonNullable<PlacementsView['job']>
const changing = (over: Record<string, unknown> = {}) => ({
  id: 'node2',
  key: 'coder',
  action: 'place' as const,
  phase: 'loading' as const,
  displaces: [],
  eta_s: null,
  job_id: 'swap-9',
  ...over,
})

const fitOn = (nodes: string[], noFitOn: string[] = []) => ({
  mode: nodes.length > 1 ? 'cluster' : 'solo',
  verdict: nodes.some((n) => noFitOn.includes(n)) ? 'no_fit' : 'fits',
  nodes: nodes.map((n) => ({
    node: n,
    weights_bytes: 60 * GB,
    kv_cache_bytes: 10 * GB,
    need_bytes: 70 * GB,
    budget_bytes: noFitOn.includes(n) ? 50 * GB : 102 * GB,
    ram_total_bytes: 128 * GB,
    other_bytes: n === 'node2' ? 12 * GB : 0,
    verdict: noFitOn.includes(n) ? 'no_fit' : 'fits',
  })),
  notes: [],
})

type Server = { view: PlacementsView; noFitOn?: string[] }
type Call = { method: string; input: Record<string, unknown> }
type Sub = { method: string; onEvent: (e: OutputOf<'streamEvents'>) => void; closed: boolean }

/** The daemon as the dashboard sees it: `server.view` is what GET /api/placements answers now. */
function fakeApi(server: Server, calls: Call[], subs: Sub[] = []): BackendApi {
  const answers: Record<string, (i: Record<string, unknown>) => unknown> = {
    listPlacements: () => server.view,
    startPlacement: (i) => ({ job_id: 'swap-9', id: (i.nodes as string[]).join('+') }),
    stopPlacement: () => ({ job_id: 'swap-10' }),
    modelFit: (i) => fitOn(i.nodes as string[], server.noFitOn),
    getHardware: () => ({ node1: hardwareRow('node1', T), node2: hardwareRow('node2', T), taken_at: T }),
    getConnectivity: () => ({ macs: {}, subjects: {}, events: [] }),
    getHardwareHistory: () => ({ node1: [], node2: [] }),
    getSshPublicKey: () => ({ public_key: 'ssh-ed25519 AAAA tandem', fingerprint: 'SHA256:x', nodes: [] }),
    listModels: () => [catalogEntry('qwen3-32b-fp8', 'Qwen 32B'), catalogEntry('coder', 'Coder')],
    diskStatus: () => ({ models: [], checked_at: T }),
    swapState: () => ({
      loaded: { key: 'qwen3-32b-fp8', served: 'Qwen/Qwen3-32B-FP8', mode: 'solo', since: T - 60_000, layout: null },
      job: null,
      swapping: null,
    }),
    listJobs: () => [],
    validateLaunch: () => ({ ok: true, stage: 'done', error: null, cmd_args: [], launch_cmd: '', parser: 'p' }),
  }
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      const a = answers[method]
      if (!a) throw new Error(`${method} not needed here`)
      return structuredClone(a(input))
    }) as BackendApi['call'],
    subscribe: ((method: string, _input: unknown, h: { onEvent: Sub['onEvent'] }) => {
      const sub: Sub = { method, onEvent: h.onEvent, closed: false }
      subs.push(sub)
      return () => (sub.closed = true)
    }) as BackendApi['subscribe'],
  }
}

function catalogEntry(key: string, name: string) {
  return {
    key,
    name,
    repo: `org/${key}`,
    engine_args: [],
    mode: 'solo',
    size_bytes: 60 * GB,
    tags: ['bundled'],
    effective_knobs: {},
    launch_args: [],
    loaded: key === 'qwen3-32b-fp8',
  }
}

const event = (seq: number, name: string, data: unknown) =>
  ({ seq, at: Date.now(), name, data }) as unknown as OutputOf<'streamEvents'>

const nodeRow = (el: HTMLElement, name: string) => el.querySelector(`li[data-node="${name}"]`) as HTMLElement
function pick(el: HTMLElement, name: string): void {
  const box = nodeRow(el, name).querySelector('input[type="checkbox"]') as HTMLInputElement
  box.checked = !box.checked
  box.dispatchEvent(new Event('change'))
}

stubCanvas()
afterEach(unmountAll)

/** A placements store that follows the push events of `server` and has read it once; calls and subscriptions recorded. */
async function followingStore(server: Server) {
  const calls: Call[] = []
  const subs: Sub[] = []
  initBackend(() => undefined, fakeApi(server, calls, subs))
  setActivePinia(createPinia())
  const store = usePlacementsStore()
  store.follow()
  await store.refresh()
  return { store, calls, subs }
}

describe('placements store', () => {
  it('reads GET /api/placements, then each placements.changed replaces the whole view; a reload shows the same', async () => {
    const server: Server = { view: startView() }
    const { store, calls, subs } = await followingStore(server)
    expect(store.placementOn('node1')?.served).toBe('Qwen/Qwen3-32B-FP8')
    expect(store.placementOn('node2')).toBeNull()
    expect(store.busyReason).toBeNull()

    // The daemon places coder on node2: the event carries the whole view, node1's model stays.
    server.view = {
      ...startView(),
      placements: [qwen, coder],
      nodes: startView().nodes.map((n) => (n.name === 'node2' ? { ...n, placement_id: 'node2' } : n)),
    }
    subs[0]!.onEvent(event(1, 'placements.changed', server.view))
    expect(store.placementOn('node2')?.served).toBe('org/coder')
    expect(store.placementOn('node1')?.served).toBe('Qwen/Qwen3-32B-FP8')
    expect(calls.filter((c) => c.method === 'listPlacements').length).toBe(1)

    // A reload: a fresh store reads the same state the events built.
    store.unfollow()
    expect(subs[0]!.closed).toBe(true)
    setActivePinia(createPinia())
    const reloaded = usePlacementsStore()
    await reloaded.refresh()
    expect(reloaded.view).toEqual(store.view)
  })

  it("takes node1's swap step from placements.changed, not from the swap.state alias", async () => {
    const server: Server = { view: startView() }
    const { store, subs } = await followingStore(server)
    const push = subs[0]!.onEvent
    push(event(1, 'swap.state', placementStep({ phase: 'validating', job_id: 'swap-8' })))
    expect(store.lastSwap).toBeNull()
    const step = placementStep({ phase: 'loading', job_id: 'swap-9' })
    push(event(2, 'placements.changed', { ...startView(), changing: changing({ id: 'node1' }), job: job(), step }))
    expect(store.lastSwap).toEqual(step)
    expect(store.swapView?.swapping).toMatchObject({ key: 'coder', phase: 'loading' })
    expect(store.view?.changing?.id).toBe('node1')
    // A view with no step (nothing but the view changed) leaves the last step as it was.
    push(event(3, 'placements.changed', { ...startView(), step: null }))
    expect(store.lastSwap).toEqual(step)
    store.unfollow()
  })

  it('follows the placement job: its job updates, the busy reason, and a resync re-reads', async () => {
    const server: Server = { view: { ...startView(), changing: changing(), job: job() } }
    const { store, calls, subs } = await followingStore(server)
    expect(store.busyReason).toBe('a placement job is running (placing node2)')

    subs[0]!.onEvent(event(1, 'job.update', { ...job({ phase: 'Ready', state: 'succeeded' }), log: undefined }))
    expect(store.view?.job?.phase).toBe('Ready')
    // Another job's update is not this view's.
    subs[0]!.onEvent(event(2, 'job.update', job({ id: 'swap-1', phase: 'Stopping' })))
    expect(store.view?.job?.phase).toBe('Ready')

    server.view = startView()
    subs[0]!.onEvent(event(3, 'resync', { reason: 'gap' }))
    await flush()
    expect(calls.filter((c) => c.method === 'listPlacements').length).toBe(2)
    expect(store.busyReason).toBeNull()
    store.unfollow()
  })
})

describe('Cluster view: what is placed on each node', () => {
  it("shows the model, its nodes, state and memory on its node's card, and what other processes hold", async () => {
    const lost = {
      ...qwen,
      id: 'node1+node2',
      nodes: ['node1', 'node2'],
      state: 'lost' as const,
      reason: 'node2 stopped answering',
    }
    const view = {
      ...startView(),
      placements: [lost],
      nodes: startView().nodes.map((n) =>
        n.name === 'node1' || n.name === 'node2' ? { ...n, placement_id: 'node1+node2' } : n,
      ),
    }
    const el = await mountWith(ClusterView, fakeApi({ view }, []))
    const head = el.querySelector('section[data-node="node1"]') as HTMLElement
    expect(head.querySelector('[data-test="placement-model"]')?.textContent).toBe('Qwen/Qwen3-32B-FP8 (qwen3-32b-fp8)')
    expect(head.querySelector('[data-test="placement-nodes"]')?.textContent).toContain(
      'node1+node2, tensor parallel 2 · head',
    )
    expect(head.querySelector('[data-test="placement-state"]')?.textContent).toBe('lost')
    expect(head.textContent).toContain('node2 stopped answering')
    expect(head.querySelector('[data-test="placement-memory"]')?.textContent).toContain(
      'reserves 97.0 GB of memory here',
    )
    const worker = el.querySelector('section[data-node="node2"]') as HTMLElement
    expect(worker.textContent).toContain('worker (head node1)')
    expect(worker.querySelector('[data-test="placement-other"]')?.textContent).toContain('other processes hold 12.0 GB')
    // One Stop per placement: on its head's card.
    expect(buttons(head, 'Stop').length).toBe(1)
    expect(buttons(worker, 'Stop').length).toBe(0)
  })

  it('stops a placement only after Confirm, and not while a placement job runs', async () => {
    const server = { view: startView() }
    const calls: Call[] = []
    const subs: Sub[] = []
    const el = await mountWith(ClusterView, fakeApi(server, calls, subs))
    const head = el.querySelector('section[data-node="node1"]') as HTMLElement
    expect(el.querySelector('section[data-node="node2"]')?.textContent).toContain('Nothing placed.')
    button(head, 'Stop').click()
    await flush()
    expect(calls.some((c) => c.method === 'stopPlacement')).toBe(false)
    expect(head.querySelector('[role="alertdialog"]')?.textContent).toContain('Stop Qwen/Qwen3-32B-FP8')
    button(head, 'Confirm').click()
    await flush()
    expect(calls.find((c) => c.method === 'stopPlacement')?.input).toEqual({ id: 'node1' })

    const push = subs.find((s) => s.method === 'streamEvents')!.onEvent
    push(event(1, 'placements.changed', { ...startView(), changing: changing(), job: job() }))
    await flush()
    expect(button(head, 'Stop').disabled).toBe(true)
    expect(head.textContent).toContain('Cannot stop now: a placement job is running (placing node2)')
    expect(el.querySelector('section[data-node="node2"]')?.textContent).toContain('placing coder on node2 (loading)')
  })
})

describe('Models view: Place on…', () => {
  const model = catalogEntry('coder', 'Coder')

  it('blocks unreachable nodes and a head without a launcher, says what a taken node displaces, and places head first', async () => {
    const calls: Call[] = []
    const el = await mountWith(PlaceDialog, fakeApi({ view: startView() }, calls), { model, where: 'nodes' })
    expect(nodeRow(el, 'node1').textContent).toContain(
      'taken by Qwen/Qwen3-32B-FP8 (qwen3-32b-fp8) (node1): placing here stops it',
    )
    expect((nodeRow(el, 'node1').querySelector('input') as HTMLInputElement).disabled).toBe(false)
    expect(nodeRow(el, 'node3').textContent).toContain('unreachable at the last probe')
    expect((nodeRow(el, 'node3').querySelector('input') as HTMLInputElement).disabled).toBe(true)
    expect(nodeRow(el, 'node4').textContent).toContain('no launcher checkout here')
    expect((nodeRow(el, 'node4').querySelector('input') as HTMLInputElement).disabled).toBe(true)
    // Fits are asked for each node that could be picked, never for an unreachable one.
    expect(calls.filter((c) => c.method === 'modelFit').map((c) => c.input.nodes)).toEqual([
      ['node1'],
      ['node2'],
      ['node4'],
    ])
    expect(button(el, 'Place on …').disabled).toBe(true)

    pick(el, 'node2')
    await flush()
    expect(nodeRow(el, 'node2').textContent).toContain('head')
    // With a head picked, node4 may join as a worker.
    expect((nodeRow(el, 'node4').querySelector('input') as HTMLInputElement).disabled).toBe(false)
    expect(el.textContent).toContain('On node2, solo')
    expect(el.textContent).toContain('other processes hold 12.0 GB')
    expect(el.querySelector('[data-test="place-displaces"]')).toBeNull()
    pick(el, 'node4')
    await flush()
    expect(nodeRow(el, 'node4').textContent).toContain('worker 1')
    expect(el.textContent).toContain('On node2+node4, tensor parallel 2')
    button(el, 'Place on node2+node4').click()
    await flush()
    expect(calls.find((c) => c.method === 'startPlacement')?.input).toEqual({
      key: 'coder',
      nodes: ['node2', 'node4'],
      confirm_no_fit: false,
      displace: false,
    })
  })

  it('shows where the model does not fit, says which placement it stops, and asks twice', async () => {
    const calls: Call[] = []
    const el = await mountWith(PlaceDialog, fakeApi({ view: startView(), noFitOn: ['node1'] }, calls), {
      model,
      where: 'nodes',
    })
    expect(nodeRow(el, 'node1').textContent).toContain('does not fit: needs 70.0 GB of 50.0 GB')
    pick(el, 'node1')
    await flush()
    expect(el.querySelector('[data-test="place-displaces"]')?.textContent).toContain(
      'This stops Qwen/Qwen3-32B-FP8 (qwen3-32b-fp8) (node1) first',
    )
    button(el, 'Place on node1').click()
    await flush()
    expect(calls.some((c) => c.method === 'startPlacement')).toBe(false)
    expect(el.querySelector('[role="alertdialog"]')?.textContent).toContain('does not fit on node1')
    expect(document.activeElement).toBe(button(el, 'Place anyway'))
    button(el, 'Place anyway').click()
    await flush()
    expect(calls.find((c) => c.method === 'startPlacement')?.input).toEqual({
      key: 'coder',
      nodes: ['node1'],
      confirm_no_fit: true,
      // The dialog said it stops node1's placement before the button: the yes goes with the request.
      displace: true,
    })
  })

  it('says where the model already runs, and that placing it again adds a copy', async () => {
    const none = await mountWith(PlaceDialog, fakeApi({ view: startView() }, []), { model, where: 'nodes' })
    expect(none.querySelector('[data-test="place-already"]')).toBeNull()
    const lostCopy = {
      ...coder,
      id: 'node3',
      nodes: ['node3'],
      head: 'node3',
      state: 'lost' as const,
      reason: 'node3 is unreachable',
    }
    const view = { ...startView(), placements: [qwen, coder, lostCopy] }
    const el = await mountWith(PlaceDialog, fakeApi({ view }, []), { model, where: 'nodes' })
    expect(el.querySelector('[data-test="place-already"]')?.textContent?.replace(/\s+/g, ' ').trim()).toBe(
      'Coder already runs on node2 (ready), node3 (lost: node3 is unreachable). Placing it again adds a copy: each request goes to the least busy copy that answers.',
    )
  })

  it('refuses to place while a placement job runs, with the reason', async () => {
    const view = { ...startView(), changing: changing({ id: 'node4' }), job: job() }
    const el = await mountWith(PlaceDialog, fakeApi({ view }, []), { model, where: 'nodes' })
    pick(el, 'node2')
    await flush()
    const place = button(el, 'Place on node2')
    expect(place.disabled).toBe(true)
    // It names the job that holds it, for the eye (title) and for a screen reader (its description).
    expect(place.title).toBe('a placement job is running: placing coder on node4 (loading)')
    const why = el.querySelector(`#${place.getAttribute('aria-describedby') ?? 'none'}`)
    expect(why?.textContent).toContain(
      'Cannot place now: a placement job is running: placing coder on node4 (loading).',
    )
  })

  it("offers both today's swap on node1 and Place on…", async () => {
    const el = await mountWith(PlaceDialog, fakeApi({ view: startView() }, []), { model })
    expect(el.querySelector('section[aria-label="Swap to Coder"]')).not.toBeNull()
    button(el, 'Place on…').click()
    await flush()
    expect(el.querySelector('section[aria-label="Swap to Coder"]')).toBeNull()
    expect(el.querySelector('section[aria-label="Place Coder"]')).not.toBeNull()
    expect(nodeRow(el, 'node2')).not.toBeNull()
  })

  it('lists every node of the view in order, picked ones numbered from the head', () => {
    const choices = placeChoices(startView(), ['node2', 'node1'], () => null)
    expect(choices.map((c) => [c.name, c.order])).toEqual([
      ['node1', 2],
      ['node2', 1],
      ['node3', null],
      ['node4', null],
    ])
  })
})

describe('Models view: the models placed beside node1', () => {
  it('names them in the loaded bar and on their cards; a placement job elsewhere is not a swap of node1', async () => {
    const server: Server = {
      view: {
        ...startView(),
        placements: [qwen, coder],
        nodes: startView().nodes.map((n) => (n.name === 'node2' ? { ...n, placement_id: 'node2' } : n)),
      },
    }
    const subs: Sub[] = []
    const el = await mountWith(ModelsView, fakeApi(server, [], subs))
    const bar = () => el.querySelector('.loaded-bar')?.textContent ?? ''
    expect(bar()).toContain('Qwen 32B')
    expect(el.querySelector('[data-test="other-placement"]')?.textContent).toBe(
      '· also org/coder (coder) on node2, solo (ready)',
    )
    const card = el.querySelector('article.model[data-key="coder"]') as HTMLElement
    expect(card.querySelector('[data-test="placed-badge"]')?.textContent).toBe('placed · node2, solo')
    expect(el.querySelector('article.model[data-key="qwen3-32b-fp8"] [data-test="placed-badge"]')).toBeNull()

    // Placing on node4: node1's model keeps serving, and the bar says where the job is.
    const push = subs.find((s) => s.method === 'streamEvents')!.onEvent
    const step = {
      key: 'coder',
      mode: 'solo',
      phase: 'loading',
      job_id: 'swap-9',
      loaded: { key: 'qwen3-32b-fp8', served: 'Qwen/Qwen3-32B-FP8', mode: 'solo', since: T - 60_000, layout: null },
      detail: null,
      placement_id: 'node4',
      nodes: ['node4'],
    }
    push(event(1, 'placements.changed', { ...server.view, changing: changing({ id: 'node4' }), job: job(), step }))
    await flush()
    expect(bar()).not.toContain('swapping')
    expect(bar()).toContain('Qwen 32B')
    expect(el.querySelector('[data-test="placing-elsewhere"]')?.textContent).toBe('· placing Coder on node4 (Loading)')
    expect(el.querySelector('section[aria-label="Swap progress"] h2')?.textContent).toContain('Coder on node4')
  })
})
