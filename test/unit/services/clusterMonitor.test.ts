import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { ClusterMonitor, type ProbeScope } from '../../../src-main/services/clusterMonitor'

function make(intervalS: number) {
  const clock = new ManualClock()
  const probes: ProbeScope[] = []
  const sink = new MemorySink()
  let watchers = 0
  let fail = false
  const monitor = new ClusterMonitor({
    clock,
    logger: createLogger({ sink }),
    intervalS,
    watching: () => watchers > 0,
    probe: async (scope) => {
      probes.push(scope)
      if (fail) throw new Error('ssh down')
    },
  })
  return {
    clock,
    probes,
    sink,
    monitor,
    watch: (n: number) => (watchers = n),
    failNext: () => (fail = true),
  }
}

describe('the node monitor', () => {
  it('probes everything every interval while no one watches', async () => {
    const m = make(60)
    await m.monitor.tick()
    expect(m.probes).toEqual([])
    m.clock.advance(60_000)
    await m.monitor.tick()
    m.clock.advance(8_000)
    await m.monitor.tick()
    expect(m.probes).toEqual(['all'])
  })

  it('keeps a watched dashboard live: hardware every tick, services every other tick', async () => {
    const m = make(0)
    await m.monitor.tick()
    expect(m.probes).toEqual([])
    m.watch(1)
    for (let i = 0; i < 4; i++) await m.monitor.tick()
    expect(m.probes).toEqual(['all', 'hardware', 'all', 'hardware'])
    m.watch(0)
    await m.monitor.tick()
    expect(m.probes).toHaveLength(4)
  })

  it('logs a failed probe and keeps going', async () => {
    const m = make(0)
    m.watch(1)
    m.failNext()
    await m.monitor.tick()
    expect(m.sink.lines.some((l) => l.includes('background probe failed'))).toBe(true)
    await m.monitor.tick()
    expect(m.probes).toHaveLength(2)
  })
})
