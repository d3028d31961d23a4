// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { flush, mountWith, stubCanvas, unmountAll } from './mount'
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

function fakeApi(node2: unknown, calls: { method: string; input: unknown }[]): BackendApi {
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
    getStatus: null,
    getHardwareHistory: {
      node1: [
        { at: T - 120_000, gpu_utilization_pct: 10, gpu_temperature_c: 45, gpu_power_w: 12, load1: 0.5 },
        { at: T - 60_000, gpu_utilization_pct: 30, gpu_temperature_c: 49, gpu_power_w: 20, load1: 0.9 },
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
      if (method === 'getStatus') throw new Error('status not needed here')
      return answers[method]
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
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
    const wake = [...el.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Wake')
    expect(wake).toBeDefined()
    wake!.click()
    await flush()
    expect(calls.find((c) => c.method === 'wakeNode')?.input).toEqual({ name: 'node2' })
    expect(el.textContent).toContain('Magic packet sent to 4c:bb:47:2e:91:0b from node1')
    // The server's 15 minutes of readings chart at once.
    expect(el.textContent).toContain('node1 GPU utilisation (last 15 min)')
    expect(el.textContent).not.toContain('node2 GPU utilisation')
    // The event list shows transitions and reports.
    expect(el.textContent).toContain('after 6600 s up')
    expect(el.textContent).toContain('notes-app')
    expect(el.querySelectorAll('.tl-seg.down').length).toBeGreaterThan(0)
  })

  it('offers no Wake without a cached MAC', async () => {
    const el = await mount(unreachable(null), [])
    expect([...el.querySelectorAll('button')].some((b) => b.textContent?.trim() === 'Wake')).toBe(false)
    expect(el.textContent).toContain('No MAC cached yet')
  })
})
