import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type net from 'node:net'
import { describe, expect, it } from 'vitest'
import { ConnectionBudget, readFileLimit, totalConnectionsFor } from '../../../src-main/http/connectionBudget'

/** A socket as the budget sees it: an address, destroy, close. */
function socketFrom(remoteAddress: string): net.Socket & { destroyed: boolean } {
  const s = Object.assign(new EventEmitter(), {
    remoteAddress,
    destroyed: false,
    destroy() {
      if (s.destroyed) return s
      s.destroyed = true
      queueMicrotask(() => s.emit('close'))
      return s
    },
  })
  return s as unknown as net.Socket & { destroyed: boolean }
}

const caps = { total: 10, perAddress: 3, perIpv6Prefix: 5, operatorReserve: 2 }

describe('the connection budget (issue 42 #2)', () => {
  it('caps IPv6 per address and per /64, IPv4 per address, and logs each refused source once', () => {
    const log: string[] = []
    const budget = new ConnectionBudget({ ...caps, total: 100 }, (m) => log.push(m))
    const admit = (a: string): boolean => budget.admit(socketFrom(a))
    expect([admit('2001:db8::1'), admit('2001:db8::1'), admit('2001:db8::1'), admit('2001:db8::1')]).toEqual([
      true,
      true,
      true,
      false,
    ])
    // Other hosts of the /64 until the /64 holds 5; a host of another /64 is not affected.
    expect([admit('2001:db8::2'), admit('2001:db8:0:0:1::3'), admit('2001:db8::4')]).toEqual([true, true, false])
    expect(admit('2001:db8:0:1::1')).toBe(true)
    // IPv4-mapped addresses count as the IPv4 address; IPv4 has no prefix cap.
    expect([admit('10.0.0.1'), admit('::ffff:10.0.0.1'), admit('10.0.0.1'), admit('10.0.0.1')]).toEqual([
      true,
      true,
      true,
      false,
    ])
    for (let i = 2; i < 20; i++) expect(admit(`10.0.0.${i}`)).toBe(true)
    admit('2001:db8::1')
    admit('2001:db8::9')
    expect(log.filter((l) => l.includes('address 2001:db8:0:0:0:0:0:1 '))).toHaveLength(1)
    expect(log.filter((l) => l.includes('network 2001:db8:0:0::/64'))).toHaveLength(1)
    expect(log.filter((l) => l.includes('address 10.0.0.1 '))).toHaveLength(1)
  })

  it('keeps the reserve for credentials: the oldest unverified reserve connection makes room, a verified one stays', async () => {
    const log: string[] = []
    const budget = new ConnectionBudget(caps, (m) => log.push(m))
    const ordinary = Array.from({ length: 8 }, (_, i) => socketFrom(`10.1.0.${i}`))
    for (const s of ordinary) expect(budget.admit(s)).toBe(true)
    for (const s of ordinary) expect(budget.onProbation(s)).toBe(false)
    const operator = socketFrom('10.2.0.1')
    const stranger = socketFrom('10.2.0.2')
    expect(budget.admit(operator)).toBe(true)
    expect(budget.admit(stranger)).toBe(true)
    expect(budget.onProbation(operator)).toBe(true)
    budget.verified(operator)
    // Full: a newcomer takes the stranger's place, never the operator's.
    const next = socketFrom('10.2.0.3')
    expect(budget.admit(next)).toBe(true)
    expect(stranger.destroyed).toBe(true)
    expect(operator.destroyed).toBe(false)
    expect(budget.inUse).toBe(10)
    budget.verified(next)
    // Nothing left on probation: refused at accept, logged once.
    expect(budget.admit(socketFrom('10.2.0.4'))).toBe(false)
    expect(budget.admit(socketFrom('10.2.0.5'))).toBe(false)
    expect(log.filter((l) => l.includes('all clients'))).toHaveLength(1)
    // Closing gives places back.
    ordinary[0]!.destroy()
    await new Promise((r) => setTimeout(r, 0))
    expect(budget.inUse).toBe(9)
  })

  it('reads the file limit from procfs and sizes the total below it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-limits-'))
    try {
      const file = path.join(dir, 'limits')
      fs.writeFileSync(
        file,
        'Limit   Soft Limit   Hard Limit   Units\nMax open files            20000                20000                files\n',
      )
      expect(readFileLimit(file)).toEqual({ soft: 20000, hard: 20000 })
      expect(readFileLimit(path.join(dir, 'missing'))).toBeNull()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
    expect(totalConnectionsFor({ soft: 20000, hard: 20000 })).toBe(15000)
    expect(totalConnectionsFor({ soft: 1024, hard: 4096 })).toBe(768)
    expect(totalConnectionsFor({ soft: 100, hard: 100 })).toBe(64)
    expect(totalConnectionsFor(null)).toBe(4096)
  })
})
