// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import { buttons, flush, mountWith, stubCanvas, unmountAll } from './mount'
import ClusterView from '../../../src-renderer/views/ClusterView.vue'

const T = Date.now()

const okNode = {
  node: 'node1',
  status: 'ok',
  host: '10.0.0.11',
  hostname: 'spark-a1',
  uptime_s: 3600,
  load: [1, 0.5, 0.25],
  cores: 20,
  ram: { total_bytes: 128e9, used_bytes: 10e9, available_bytes: 118e9 },
  disk: { mount: '/', total_bytes: 4e12, used_bytes: 1e12, available_bytes: 3e12 },
  gpu: {
    name: 'NVIDIA GB10',
    utilization_pct: 20,
    temperature_c: 50,
    power_w: 20,
    memory_used_bytes: 64e9,
    memory_total_bytes: 128e9,
    memory_fraction: 0.5,
    processes: [],
  },
  gpu_unified_memory: true,
  interface: 'enP7s7',
  mac: '4c:bb:47:2e:91:0a',
  probed_at: T,
  probe_ms: 20,
}

function unreachable(mac: string | null) {
  return {
    node: 'node2',
    status: 'unreachable',
    host: '10.0.0.12',
    port: 22,
    error: 'connect ECONNREFUSED',
    error_kind: 'unreachable',
    mac,
    probed_at: T,
  }
}

type Subscription = { method: string; onEvent: (e: OutputOf<'streamEvents'>) => void; closed: boolean }

function fakeApi(
  node2: unknown,
  calls: { method: string; input: unknown }[],
  subs: Subscription[] = [],
  status: unknown = null,
): BackendApi {
  const answers: Record<string, unknown> = {
    getHardware: { node1: okNode, node2, taken_at: T },
    getConnectivity: {
      macs: { node1: '4c:bb:47:2e:91:0a' },
      subjects: {
        node1: { state: 'up', last_change: T - 7200_000 },
        node2: { state: 'down', last_change: T - 600_000 },
      },
      events: [
        { at: T - 600_000, subject: 'node2', kind: 'transition', state: 'down', up_seconds: 6600 },
        {
          at: T - 300_000,
          subject: 'asr',
          kind: 'report',
          ok: false,
          source: 'notes-app',
          error: 'HTTP 500',
          detail: null,
          ms: 812,
        },
      ],
    },
    getStatus: status,
    getHardwareHistory: {
      node1: [
        { at: T - 120_000, gpu_utilization_pct: 10, gpu_temperature_c: 45, gpu_power_w: 12, load1: 0.5 },
        {
          at: T - 60_000,
          gpu_utilization_pct: 30,
          gpu_temperature_c: 49,
          gpu_power_w: 20,
          load1: 0.9,
          ram_used_bytes: 8 * 2 ** 30,
          ram_total_bytes: 128 * 2 ** 30,
          gpu_memory_used_bytes: 40 * 2 ** 30,
          gpu_memory_total_bytes: 128 * 2 ** 30,
        },
      ],
      node2: [],
    },
    getSshPublicKey: { public_key: 'ssh-ed25519 AAAAC3 tandem@box', fingerprint: 'SHA256:x', nodes: [] },
    wakeNode: { ok: true, node: 'node2', mac: '4c:bb:47:2e:91:0b', via: 'relay', relay: 'node1', attempts: [] },
  }
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'getStatus' && status === null) throw new Error('status not needed here')
      return structuredClone(answers[method])
    }) as BackendApi['call'],
    subscribe: ((method: string, _input: unknown, h: { onEvent: Subscription['onEvent'] }) => {
      const sub: Subscription = { method, onEvent: h.onEvent, closed: false }
      subs.push(sub)
      return () => (sub.closed = true)
    }) as BackendApi['subscribe'],
  }
}

stubCanvas()
afterEach(unmountAll)

const mount = (node2: unknown, calls: { method: string; input: unknown }[]): Promise<HTMLElement> =>
  mountWith(ClusterView, fakeApi(node2, calls))

describe('Cluster view', () => {
  it('shows node readings, the unreachable error, and Wake when a MAC is cached', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mount(unreachable('4c:bb:47:2e:91:0b'), calls)
    expect(el.textContent).toContain('spark-a1')
    expect(el.textContent).toContain('GPU memory (unified)')
    expect(el.textContent).toContain('connect ECONNREFUSED')
    // A failing service check is reported without blanking the hardware cards.
    expect(el.textContent).toContain('services: status not needed here')
    const wake = buttons(el, 'Wake')
    expect(wake).toHaveLength(1)
    wake[0]!.click()
    await flush()
    expect(calls.find((c) => c.method === 'wakeNode')?.input).toEqual({ name: 'node2' })
    expect(el.textContent).toContain('Magic packet sent to 4c:bb:47:2e:91:0b from node1')
    // The server's 15 minutes of readings chart at once.
    expect(el.textContent).toContain('node1 (last 15 min)')
    expect(el.textContent).toContain('node1 GPU utilisation')
    // CPU load, RAM and GPU memory history beside the GPU charts (issue 13, item 5).
    expect(el.textContent).toContain('node1 CPU load (1 min average)')
    expect(el.textContent).toContain('node1 memory in use')
    expect(el.textContent).not.toContain('node2 GPU utilisation')
    // The event list shows transitions and reports.
    expect(el.textContent).toContain('after 6600 s up')
    expect(el.textContent).toContain('notes-app')
    expect(el.querySelectorAll('.tl-seg.down').length).toBeGreaterThan(0)
  })

  it('offers no Wake without a cached MAC', async () => {
    const el = await mount(unreachable(null), [])
    expect(buttons(el, 'Wake')).toEqual([])
    expect(el.textContent).toContain('No MAC cached yet')
  })
})

describe('Cluster view, more than two nodes', () => {
  it('shows a card per configured node with its cluster-link address, node3 and on', async () => {
    const calls: { method: string; input: unknown }[] = []
    const base = fakeApi(unreachable('4c:bb:47:2e:91:0b'), calls)
    const node3 = { ...okNode, node: 'node3', host: '10.0.0.13', hostname: 'spark-c3', cluster_ip: '192.168.177.13' }
    const answers: Record<string, unknown> = {
      getHardware: {
        node1: { ...okNode, cluster_ip: '192.168.177.11' },
        node2: unreachable(null),
        node3,
        node4: { node: 'node4', status: 'not_configured' },
        taken_at: T,
      },
      getHardwareHistory: {
        node1: [],
        node2: [],
        node3: [
          { at: T - 120_000, gpu_utilization_pct: 10, gpu_temperature_c: 45, gpu_power_w: 12, load1: 0.5 },
          { at: T - 60_000, gpu_utilization_pct: 30, gpu_temperature_c: 49, gpu_power_w: 20, load1: 0.9 },
        ],
      },
    }
    const api: BackendApi = {
      ...base,
      call: (async (method: string, input: unknown) =>
        method in answers
          ? structuredClone(answers[method])
          : base.call(method as never, input as never)) as BackendApi['call'],
    }
    const el = await mountWith(ClusterView, api)
    const cards = [...el.querySelectorAll('article.node')].map((a) => a.getAttribute('aria-label'))
    expect(cards).toEqual(['node1 hardware', 'node2 hardware', 'node3 hardware', 'node4 hardware'])
    const clusterIps = [...el.querySelectorAll('[data-testid="cluster-ip"]')].map((m) => m.textContent)
    expect(clusterIps.join(' ')).toContain('192.168.177.11')
    expect(clusterIps.join(' ')).toContain('192.168.177.13')
    expect(el.textContent).toContain('spark-c3')
    expect(el.textContent).toContain('Its entry in More nodes (NODES')
    expect(el.textContent).toContain('node3 (last 15 min)')
  })
})

const service = (name: string, label: string, model: string | null) => ({
  name,
  configured: true,
  host: '10.0.0.11',
  port: 8888,
  container: `${name}_c`,
  container_state: 'running',
  restart_count: 0,
  started_at: null,
  http_ok: label === 'Healthy',
  http_ms: 5,
  model,
  base_url: 'http://tandem/v1',
  upstream_url: `http://10.0.0.11:8888`,
  label,
  label_reason: null,
  actions_blocked: null,
  error: null,
})

describe('Cluster view, live', () => {
  it('updates from push events instead of polling, and reads again on focus', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    try {
      const calls: { method: string; input: unknown }[] = []
      const subs: Subscription[] = []
      const status = {
        llm: service('llm', 'Healthy', 'org/model-a'),
        asr: service('asr', 'Healthy', null),
        tts: service('tts', 'Healthy', null),
        placements: [],
        checked_at: T,
      }
      const el = await mountWith(ClusterView, fakeApi(unreachable(null), calls, subs, status))
      const hardwareReads = () => calls.filter((c) => c.method === 'getHardware').length
      expect(hardwareReads()).toBe(1)
      expect(subs.map((s) => s.method)).toEqual(['streamEvents'])
      const push = subs[0]!.onEvent

      // Minutes pass: no polling.
      vi.advanceTimersByTime(5 * 60_000)
      await flush()
      expect(hardwareReads()).toBe(1)

      push({
        seq: 1,
        at: T,
        name: 'hardware.snapshot',
        data: {
          node1: { ...okNode, hostname: 'spark-renamed' },
          node2: { ...okNode, node: 'node2', hostname: 'spark-b2' },
          taken_at: T,
        },
        // A snapshot's `taken_at` sits beside its node rows, which a literal cannot be checked against.
      } as unknown as OutputOf<'streamEvents'>)
      push({
        seq: 2,
        at: T,
        name: 'connectivity.transition',
        data: { at: T, subject: 'node2', kind: 'transition', state: 'up', down_seconds: 42 },
      })
      push({
        seq: 3,
        at: T,
        name: 'service.state',
        data: { service: 'llm', previous: 'Healthy', status: service('llm', 'Unhealthy', 'org/model-b') },
      } as OutputOf<'streamEvents'>)
      await flush()
      expect(el.textContent).toContain('spark-renamed')
      expect(el.textContent).toContain('spark-b2')
      expect(el.textContent).toContain('after 42 s down')
      expect(el.textContent).toContain('org/model-b')
      expect(el.textContent).toContain('Unhealthy')
      expect(hardwareReads()).toBe(1)

      // A resync (the stream lost events) and a window focus both read everything again.
      push({ seq: 3, at: T, name: 'resync', data: { reason: 'gap' } })
      await flush()
      expect(hardwareReads()).toBe(2)
      window.dispatchEvent(new Event('focus'))
      await flush()
      expect(hardwareReads()).toBe(3)

      unmountAll()
      expect(subs[0]!.closed).toBe(true)
    } finally {
      vi.useRealTimers()
    }
  })
})
