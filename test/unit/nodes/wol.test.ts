import dgram from 'node:dgram'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { magicPacket, relayCommand, sendBroadcast, wake } from '../../../src-main/nodes/wol'
import { startSimKit, type SimKit } from '../../sim/testkit'

/** A UDP listener on 127.0.0.1: the only place a wake packet may go in tests. */
async function listener(): Promise<{ port: number; packets: Buffer[]; close(): void }> {
  const sock = dgram.createSocket('udp4')
  const packets: Buffer[] = []
  sock.on('message', (m) => packets.push(m))
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r))
  return { port: (sock.address() as AddressInfo).port, packets, close: () => sock.close() }
}

const until = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 20))
}

describe('magic packet', () => {
  it('is 6 × 0xFF then the MAC 16 times', () => {
    const p = magicPacket('4C-BB-47-2E-91-0A')
    expect(p.length).toBe(102)
    expect(p.subarray(0, 6)).toEqual(Buffer.alloc(6, 0xff))
    for (let i = 0; i < 16; i++) expect(p.subarray(6 + i * 6, 12 + i * 6).toString('hex')).toBe('4cbb472e910a')
  })
  it('refuses a malformed MAC', () => {
    expect(() => magicPacket('4c:bb:47')).toThrow(/not a MAC/)
  })
})

describe('sending', () => {
  let kit: SimKit
  beforeAll(async () => {
    kit = await startSimKit()
  })
  afterAll(async () => kit.close())

  it('broadcast fallback reaches a loopback listener with the exact bytes', async () => {
    const a = await listener()
    const b = await listener()
    await sendBroadcast(magicPacket('4c:bb:47:2e:91:0b'), '127.0.0.1', [a.port, b.port])
    await until(() => a.packets.length > 0 && b.packets.length > 0)
    expect(a.packets[0]).toEqual(magicPacket('4c:bb:47:2e:91:0b'))
    expect(b.packets[0]).toEqual(magicPacket('4c:bb:47:2e:91:0b'))
    a.close()
    b.close()
  })

  it('the relay path sends from the other node over SSH', async () => {
    const a = await listener()
    const res = await wake(
      { pool: kit.pool, logger: kit.logger, broadcastAddress: '127.0.0.1', ports: [a.port] },
      '4c:bb:47:2e:91:0a',
      [{ name: 'node2', target: kit.target(kit.sim.node2) }],
    )
    expect(res).toMatchObject({ ok: true, via: 'relay', relay: 'node2' })
    expect(kit.sim.node2.commands.at(-1)).toBe(relayCommand(magicPacket('4c:bb:47:2e:91:0a'), '127.0.0.1', [a.port]))
    await until(() => a.packets.length > 0)
    expect(a.packets[0]).toEqual(magicPacket('4c:bb:47:2e:91:0a'))
    a.close()
  })

  it('falls back to a broadcast when the relay is down', async () => {
    const a = await listener()
    await kit.sim.node2.down()
    const res = await wake(
      { pool: kit.pool, logger: kit.logger, broadcastAddress: '127.0.0.1', ports: [a.port] },
      '4c:bb:47:2e:91:0a',
      [{ name: 'node2', target: kit.target(kit.sim.node2) }],
    )
    expect(res.via).toBe('broadcast')
    expect(res.attempts.map((x) => [x.via, x.ok])).toEqual([
      ['relay', false],
      ['broadcast', true],
    ])
    await until(() => a.packets.length > 0)
    expect(a.packets).toHaveLength(1)
    a.close()
    await kit.sim.node2.up()
  })

  it('relays through the next node when the first relay is down', async () => {
    const a = await listener()
    await kit.sim.node2.down()
    const res = await wake(
      { pool: kit.pool, logger: kit.logger, broadcastAddress: '127.0.0.1', ports: [a.port] },
      '4c:bb:47:2e:91:0c',
      [
        { name: 'node2', target: kit.target(kit.sim.node2) },
        { name: 'node3', target: kit.target(kit.sim.node1) },
      ],
    )
    expect(res).toMatchObject({ ok: true, via: 'relay', relay: 'node3' })
    expect(res.attempts.map((x) => [x.via, x.ok, x.detail.split(':')[0]])).toEqual([
      ['relay', false, 'node2'],
      ['relay', true, 'node3'],
    ])
    await until(() => a.packets.length > 0)
    expect(a.packets[0]).toEqual(magicPacket('4c:bb:47:2e:91:0c'))
    a.close()
    await kit.sim.node2.up()
  })
})
