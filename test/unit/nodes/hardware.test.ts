import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import { ConnectivityStore } from '../../../src-main/nodes/connectivity'
import {
  BROKEN_PROBE_RETRY_MS,
  HARDWARE_CACHE_MS,
  HARDWARE_PROBE,
  HardwareService,
  parseHardware,
} from '../../../src-main/nodes/hardware'
import { parseUptime } from '../../../src-main/nodes/probeOutput'
import { startSimKit, type SimKit } from '../../sim/testkit'
import { UNREACHABLE_TTL_MS } from '../../../src-main/ssh/pool'

const GB10 = `@@hostname
spark-a1
@@uptime
 02:27:38 up 3 days,  4:00,  1 user,  load average: 0.42, 0.37, 0.30
@@nproc
20
@@free
               total        used        free      shared  buff/cache   available
Mem:    128849018880  9663676416 97710505984   104857600 21474836480 119185342464
Swap:              0           0           0
@@df
Filesystem         1-blocks          Used     Available Capacity Mounted on
/dev/nvme0n1p2 3936818380800 1202590842880 2734227537920      31% /
@@gpu
NVIDIA GB10, 20, 56, 27.83, [N/A], [N/A]
@@gpuapps
31273, VLLM::EngineCore, 98304
4121, python3, 2048
@@route
default via 192.168.177.1 dev enP7s7 proto dhcp src 192.168.177.11 metric 100
@@link
2: enP7s7: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000\\    link/ether 4C:BB:47:2E:91:0A brd ff:ff:ff:ff:ff:ff
@@end
`

describe('parseHardware', () => {
  it('reads a GB10 node: unified memory is the per-process sum over RAM', () => {
    const h = parseHardware(GB10)
    expect(h.hostname).toBe('spark-a1')
    expect(h.uptime_s).toBe(3 * 86400 + 4 * 3600)
    expect(h.load).toEqual([0.42, 0.37, 0.3])
    expect(h.cores).toBe(20)
    expect(h.ram).toEqual({ total_bytes: 128849018880, used_bytes: 9663676416, available_bytes: 119185342464 })
    expect(h.disk).toMatchObject({ mount: '/', total_bytes: 3936818380800, used_bytes: 1202590842880 })
    expect(h.gpu_unified_memory).toBe(true)
    expect(h.gpu).toMatchObject({ name: 'NVIDIA GB10', utilization_pct: 20, temperature_c: 56, power_w: 27.83 })
    const used = (98304 + 2048) * 1024 * 1024
    expect(h.gpu?.memory_used_bytes).toBe(used)
    expect(h.gpu?.memory_total_bytes).toBe(128849018880)
    expect(h.gpu?.memory_fraction).toBeCloseTo(used / 128849018880, 3)
    expect(h.gpu?.processes).toHaveLength(2)
    expect(h.interface).toBe('enP7s7')
    expect(h.mac).toBe('4c:bb:47:2e:91:0a')
  })

  it('a GB10 node has one memory pool: engine, other processes and free add up to the total (issue 46, 8)', () => {
    const total = 128849018880
    const engine = 98304 * 1024 * 1024
    // free -b that predates the GPU's allocations: the processes' own figures set the floor of what is in use.
    const stale = parseHardware(GB10).memory_pool
    expect(stale).toEqual({
      total_bytes: total,
      engine_bytes: engine,
      other_bytes: 2048 * 1024 * 1024,
      free_bytes: total - engine - 2048 * 1024 * 1024,
    })
    // As a GB10 reports it: used counts the GPU's allocations (the OS's 4.3 GB beside them).
    const used = 4294967296 + (98304 + 2048) * 1024 * 1024
    const counted = parseHardware(
      GB10.replace(
        'Mem:    128849018880  9663676416 97710505984   104857600 21474836480 119185342464',
        `Mem:    128849018880 ${used} 1000 104857600 21474836480 ${total - used}`,
      ),
    ).memory_pool
    expect(counted).toEqual({
      total_bytes: total,
      engine_bytes: engine,
      other_bytes: used - engine,
      free_bytes: total - used,
    })
    const p = counted!
    expect(p.engine_bytes + p.other_bytes + p.free_bytes).toBe(p.total_bytes)
    // A discrete GPU keeps RAM and GPU memory apart: no pool.
    expect(parseHardware(GB10.replace('[N/A], [N/A]', '49140, 1024')).memory_pool).toBeNull()
  })

  it('reads a discrete GPU with a real total', () => {
    const h = parseHardware(
      GB10.replace(
        'NVIDIA GB10, 20, 56, 27.83, [N/A], [N/A]',
        'NVIDIA RTX 6000 Ada Generation, 3, 41, 22.10, 49140, 1024',
      ),
    )
    expect(h.gpu_unified_memory).toBe(false)
    expect(h.gpu?.memory_total_bytes).toBe(49140 * 1024 * 1024)
    expect(h.gpu?.memory_used_bytes).toBe(1024 * 1024 * 1024)
  })

  it('a box without a GPU or default route leaves those empty', () => {
    const h = parseHardware(
      '@@hostname\nbox\n@@uptime\n 10:00:00 up 7 min,  0 user,  load average: 0.62, 0.36, 0.18\n@@gpu\n@@gpuapps\n@@route\n@@link\n@@end\n',
    )
    expect(h).toMatchObject({
      hostname: 'box',
      uptime_s: 420,
      gpu: null,
      gpu_unified_memory: false,
      mac: null,
      interface: null,
      ram: null,
    })
  })

  it('uptime spellings', () => {
    expect(parseUptime(' 10:00:00 up 1 day, 10 min,  2 users,  load average: 1.00, 2.00, 3.00')).toEqual({
      uptime_s: 86400 + 600,
      load: [1, 2, 3],
    })
    expect(parseUptime(' 10:00:00 up 2:03,  load average: 0.00, 0.01, 0.05').uptime_s).toBe(2 * 3600 + 180)
    expect(parseUptime('garbage')).toEqual({ uptime_s: null, load: [] })
  })
})

describe('HardwareService against the sim', () => {
  let kit: SimKit
  const clock = new ManualClock()
  let store: ConnectivityStore
  let svc: HardwareService
  beforeAll(async () => {
    kit = await startSimKit({
      clock,
      containers: { node1: [{ name: 'vllm_node', image: 'vllm-node', command: ['vllm', 'serve', 'x'] }] },
    })
    store = new ConnectivityStore(
      `${kit.dir}/connectivity.json`,
      clock,
      createLogger({ sink: { write: () => undefined } }),
    )
    svc = new HardwareService({
      pool: kit.pool,
      connectivity: store,
      clock,
      logger: kit.logger,
      targets: { node1: kit.target(kit.sim.node1), node2: kit.target(kit.sim.node2) },
    })
  })
  afterAll(async () => kit.close())

  it('probes both nodes, caches 4 s, and caches MACs', async () => {
    const snap = await svc.snapshot()
    expect(snap.node1).toMatchObject({
      status: 'ok',
      hostname: 'spark-a1',
      gpu_unified_memory: true,
      mac: '4c:bb:47:2e:91:0a',
    })
    expect(snap.node2).toMatchObject({ status: 'ok', hostname: 'spark-b2', mac: '4c:bb:47:2e:91:0b' })
    if (snap.node1.status !== 'ok') throw new Error('node1')
    expect(snap.node1.gpu?.processes[0]?.name).toBe('VLLM::EngineCore')
    expect(store.mac('node2')).toBe('4c:bb:47:2e:91:0b')
    const n = kit.sim.node1.commands.length
    clock.advance(3000)
    expect(await svc.snapshot()).toBe(snap)
    expect(kit.sim.node1.commands.length).toBe(n)
    clock.advance(1500)
    expect(await svc.snapshot()).not.toBe(snap)
    expect(kit.sim.node1.commands.length).toBe(n + 1)
  })

  it('keeps 15 minutes of readings per node', async () => {
    clock.advance(5000)
    await svc.snapshot()
    const h = svc.history()
    expect(h.node1.length).toBeGreaterThanOrEqual(2)
    expect(h.node1.at(-1)?.gpu_temperature_c).toBeGreaterThan(0)
    expect(h.node1.at(-1)?.load1).toBe(0.42)
    // RAM and GPU memory are charted beside GPU utilisation and temperature (issue 13, item 5).
    expect(h.node1.at(-1)?.ram_used_bytes).toBeGreaterThan(0)
    expect(h.node1.at(-1)?.ram_total_bytes).toBeGreaterThan(h.node1.at(-1)!.ram_used_bytes!)
    expect(h.node1.at(-1)?.gpu_memory_used_bytes).toBeGreaterThan(0)
    clock.advance(16 * 60 * 1000)
    expect(svc.history().node1).toEqual([])
  })

  it('the probe is one command a real shell runs', () => {
    expect(HARDWARE_PROBE).toContain('nvidia-smi --query-gpu=')
    expect(HARDWARE_PROBE.split('\n').every((l) => !l.includes("'$"))).toBe(true)
  })

  it('an unreachable node is an entry with the error and the cached MAC', async () => {
    await kit.sim.node2.down()
    const snap = await svc.snapshot({ fresh: true })
    expect(snap.node2).toMatchObject({ status: 'unreachable', mac: '4c:bb:47:2e:91:0b' })
    if (snap.node2.status !== 'unreachable') throw new Error('node2')
    expect(snap.node2.error).toMatch(/ECONNREFUSED|refused/)
    expect(snap.node1.status).toBe('ok')
    expect(store.state('node2')?.state).toBe('down')
    await kit.sim.node2.up()
  })

  it('a fresh read right after a node recovers probes it at once, not from the unreachable backoff', async () => {
    await kit.sim.node2.down()
    expect((await svc.snapshot({ fresh: true })).node2.status).toBe('unreachable')
    await kit.sim.node2.up()
    clock.advance(1000)
    // A plain read within the backoff still answers from it: a dead node costs one timeout, not one per poll.
    clock.advance(HARDWARE_CACHE_MS)
    const plain = await svc.snapshot()
    expect(plain.node2).toMatchObject({ status: 'unreachable' })
    const before = kit.sim.node2.commands.length
    // Concurrent fresh reads join one probe rather than one each.
    const [a, b, c] = await Promise.all([
      svc.snapshot({ fresh: true }),
      svc.snapshot({ fresh: true }),
      svc.snapshot({ fresh: true }),
    ])
    expect(a.node2).toMatchObject({ status: 'ok', hostname: 'spark-b2' })
    expect(b).toBe(a)
    expect(c).toBe(a)
    expect(kit.sim.node2.commands.length).toBe(before + 1)
    expect(store.state('node2')?.state).toBe('up')
  })

  it('a down node says when it is tried again, and coming back says how late that may have been seen (issue 46)', async () => {
    await kit.sim.node2.down()
    clock.advance(HARDWARE_CACHE_MS)
    const failedAt = clock.now()
    const down = await svc.snapshot({ fresh: true })
    expect(down.node2).toMatchObject({ status: 'unreachable', retry_at: failedAt + UNREACHABLE_TTL_MS })
    await kit.sim.node2.up()
    // Within the pool's memory of the failure the same retry time is given, counting down.
    clock.advance(10_000)
    expect((await svc.snapshot()).node2).toMatchObject({
      status: 'unreachable',
      retry_at: failedAt + UNREACHABLE_TTL_MS,
    })
    clock.advance(UNREACHABLE_TTL_MS - 10_000)
    const back = await svc.snapshot()
    expect(back.node2).toMatchObject({ status: 'ok' })
    const up = store.view().events.at(-1)
    expect(up).toMatchObject({
      subject: 'node2',
      state: 'up',
      down_seconds: 25,
      detail: 'back within 25 s after the last failed attempt',
    })
    svc.stop()
  })

  it('a probe that fails on a live connection (the channel broke as the node went down) is tried again soon', async () => {
    kit.sim.node2.failCommand('nvidia-smi', 255, 'connection lost')
    clock.advance(HARDWARE_CACHE_MS)
    const failedAt = clock.now()
    const down = await svc.snapshot({ fresh: true })
    expect(down.node2).toMatchObject({ status: 'unreachable', retry_at: failedAt + BROKEN_PROBE_RETRY_MS })
    kit.sim.node2.clearFaults()
    svc.stop()
  })
})
