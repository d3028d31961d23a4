import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { EventBus } from '../../../src-main/platform/eventBus'
import { createLogger } from '../../../src-main/lib/logger'
import { ConnectivityStore } from '../../../src-main/nodes/connectivity'
import { HardwareService } from '../../../src-main/nodes/hardware'
import type { PushEvent } from '../../../src-main/contract/events'
import { startSimKit, type SimKit } from '../../sim/testkit'

async function published(bus: EventBus): Promise<PushEvent[]> {
  const out: PushEvent[] = []
  const stream = bus.stream(0, new AbortController().signal)
  while (out.length < bus.lastSeq) out.push((await stream.next()).value as PushEvent)
  await stream.return(undefined)
  return out
}

describe('hardware snapshots and connectivity transitions on the event bus', () => {
  let kit: SimKit
  const clock = new ManualClock()
  const bus = new EventBus(clock)
  let svc: HardwareService
  beforeAll(async () => {
    kit = await startSimKit({ clock })
    const logger = createLogger({ sink: { write: () => undefined } })
    const store = new ConnectivityStore(`${kit.dir}/connectivity.json`, clock, logger, bus)
    svc = new HardwareService({
      pool: kit.pool,
      connectivity: store,
      clock,
      logger,
      // node2 points at a port nothing listens on: it is down from the first probe.
      targets: { node1: kit.target(kit.sim.node1), node2: { host: '127.0.0.1', user: 'x', port: 1 } },
      events: bus,
    })
  })
  afterAll(async () => kit.close())

  it('publishes each probed snapshot (not cached reuse) and the down transition once', async () => {
    const snap = await svc.snapshot()
    clock.advance(1000)
    await svc.snapshot() // cached: nothing new
    clock.advance(5000)
    await svc.snapshot()
    const events = await published(bus)
    const snaps = events.filter((e) => e.name === 'hardware.snapshot')
    expect(snaps).toHaveLength(2)
    expect(snaps[0]?.data).toEqual(snap)
    const transitions = events.filter((e) => e.name === 'connectivity.transition')
    expect(transitions.map((e) => [e.data.subject, e.data.state])).toEqual([['node2', 'down']])
  })
})
