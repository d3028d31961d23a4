import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { portProblem } from '../../sim/portCheck'

/** The demo refuses a busy port before starting anything (issue 13, item 6). */
describe('demo port check', () => {
  let busy: net.Server | null = null
  afterEach(async () => {
    await new Promise<void>((resolve) => (busy ? busy.close(() => resolve()) : resolve()))
    busy = null
  })

  it('names the busy port and DEMO_PORT', async () => {
    busy = net.createServer()
    await new Promise<void>((resolve) => busy!.listen(0, '127.0.0.1', resolve))
    const port = (busy.address() as AddressInfo).port
    const problem = await portProblem(port, '127.0.0.1')
    expect(problem).toContain(`Port ${port}`)
    expect(problem).toContain('DEMO_PORT=')
  })

  it('passes a free port and leaves it free', async () => {
    const probe = net.createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    expect(await portProblem(port, '127.0.0.1')).toBeNull()
    busy = net.createServer()
    await new Promise<void>((resolve, reject) => busy!.once('error', reject).listen(port, '127.0.0.1', resolve))
  })

  it('refuses a value that is not a port', async () => {
    expect(await portProblem(Number('abc'), '127.0.0.1')).toContain('DEMO_PORT')
  })
})
