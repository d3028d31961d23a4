import { describe, expect, it } from 'vitest'
import type { ConnectivityView, ServiceStatus, StatusView } from '../../../src-main/contract/nodes'
import type { EventName, EventPayload } from '../../../src-main/contract/events'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import {
  nodeLines,
  serviceLines,
  TrayFeed,
  trayMenu,
  trayTooltip,
  type TrayState,
} from '../../../src-main/desktop/trayModel'

const targets = { node1: { host: '10.0.0.11', user: 'spark' }, node2: { host: '10.0.0.12', user: 'spark' } }

function status(name: string, label: ServiceStatus['label'], label_reason: string | null = null): ServiceStatus {
  return {
    name,
    configured: label !== 'Not configured',
    host: '10.0.0.12',
    port: 9000,
    container: name,
    container_state: 'running',
    restart_count: 0,
    started_at: null,
    http_ok: label === 'Healthy',
    http_ms: 3,
    model: null,
    base_url: 'http://127.0.0.1:9999/v1',
    upstream_url: 'http://10.0.0.12:9000',
    label,
    label_reason,
    actions_blocked: null,
    error: null,
    deep_health: null,
  }
}

const firstRead = (): { connectivity: ConnectivityView; status: StatusView } => ({
  connectivity: { macs: {}, events: [], subjects: { node1: { state: 'up', last_change: 1 } } },
  status: {
    llm: status('llm', 'Healthy'),
    asr: status('asr', 'Healthy'),
    tts: status('tts', 'Not configured'),
    placements: [],
    checked_at: 1,
  },
})

/** A feed on a real event bus, read the way the dashboard reads (one getConnectivity, one getStatus). */
function feedOn(bus: EventBus): { feed: TrayFeed; seen: TrayState[]; reads: () => number } {
  const seen: TrayState[] = []
  let reads = 0
  const feed = new TrayFeed(
    {
      subscribe: (fn) => bus.subscribe(fn),
      read: async () => {
        reads += 1
        return firstRead()
      },
    },
    (state) => seen.push(state),
  )
  return { feed, seen, reads: () => reads }
}

const menuOf = (state: TrayState): string[] =>
  trayMenu(nodeLines(targets, state.connectivity), serviceLines(state)).flatMap((i) =>
    i.kind === 'status' ? [i.label] : [],
  )

describe('the tray follows the push events, like the dashboard', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const publish = <K extends EventName>(bus: EventBus, name: K, data: EventPayload<K>): void => bus.publish(name, data)

  it('reads once, then changes with connectivity, hardware and service events, with no polling', async () => {
    const bus = new EventBus(clock)
    const { feed, seen, reads } = feedOn(bus)
    await feed.start()
    expect(reads()).toBe(1)
    expect(menuOf(seen.at(-1)!)).toEqual([
      'node1 (spark@10.0.0.11): up',
      'node2 (spark@10.0.0.12): not checked yet',
      'llm: Healthy',
      'asr: Healthy',
    ])

    publish(bus, 'connectivity.transition', {
      at: 5,
      subject: 'node1',
      kind: 'transition',
      state: 'down',
      up_seconds: 4,
    })
    // A node's first sighting up records no transition: the hardware snapshot of that probe tells it.
    publish(bus, 'hardware.snapshot', {
      node1: { node: 'node1', status: 'unreachable', host: '10.0.0.11', error: 'timeout' },
      node2: { node: 'node2', status: 'unreachable', host: '10.0.0.12', error: 'timeout' },
      taken_at: 6,
    } as unknown as EventPayload<'hardware.snapshot'>)
    publish(bus, 'service.state', {
      service: 'asr',
      previous: 'Healthy',
      status: status('asr', 'Unhealthy', 'deep health: wedged'),
    })
    const last = seen.at(-1)!
    expect(menuOf(last)).toEqual([
      'node1 (spark@10.0.0.11): down',
      'node2 (spark@10.0.0.12): down',
      'llm: Healthy',
      'asr: Unhealthy (deep health: wedged)',
    ])
    expect(trayTooltip(nodeLines(targets, last.connectivity), serviceLines(last))).toBe(
      'Tandem: node1 down, node2 down; asr Unhealthy',
    )
    expect(reads()).toBe(1)

    feed.stop()
    const count = seen.length
    publish(bus, 'service.state', { service: 'asr', previous: 'Unhealthy', status: status('asr', 'Healthy') })
    expect(seen.length).toBe(count)
  })

  it('keeps an event that arrives while the first read is under way', async () => {
    const bus = new EventBus(clock)
    const seen: TrayState[] = []
    const feed = new TrayFeed(
      {
        subscribe: (fn) => bus.subscribe(fn),
        read: async () => {
          const view = firstRead()
          // The read answered with what it saw; then a change is published before it is applied.
          bus.publish('service.state', { service: 'llm', previous: 'Healthy', status: status('llm', 'Stopped') })
          return view
        },
      },
      (state) => seen.push(state),
    )
    await feed.start()
    expect(menuOf(seen.at(-1)!)).toContain('llm: Stopped')
    feed.stop()
  })

  it('shows the nodes even when the first read fails, and fills in from events', async () => {
    const bus = new EventBus(clock)
    const seen: TrayState[] = []
    const feed = new TrayFeed(
      {
        subscribe: (fn) => bus.subscribe(fn),
        read: async () => ({ connectivity: null, status: null }),
      },
      (state) => seen.push(state),
    )
    await feed.start()
    expect(menuOf(seen.at(-1)!)).toEqual([
      'node1 (spark@10.0.0.11): not checked yet',
      'node2 (spark@10.0.0.12): not checked yet',
    ])
    bus.publish('connectivity.transition', {
      at: 5,
      subject: 'node2',
      kind: 'transition',
      state: 'up',
      down_seconds: 3,
    })
    expect(menuOf(seen.at(-1)!)[1]).toBe('node2 (spark@10.0.0.12): up')
    feed.stop()
  })
})
