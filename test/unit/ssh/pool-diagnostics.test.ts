import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import { HostKeyStore } from '../../../src-main/ssh/hostKeys'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { SshError, SshPool, type SshTarget } from '../../../src-main/ssh/pool'

/**
 * What a failed connection says (issue 33, item 7): a node that answers with something other than
 * SSH, or closes at once, is not reported as a node that did not answer.
 */
let dir: string
let pool: SshPool
const servers: net.Server[] = []

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-pooldiag-'))
  const clock = new ManualClock()
  pool = new SshPool({
    privateKey: ensureServiceKey(path.join(dir, 'ssh')).privateKey,
    hostKeys: new HostKeyStore(path.join(dir, 'known_hosts.json'), () => clock.now()),
    clock,
    logger: createLogger({ sink: { write: () => undefined } }),
  })
})
afterAll(async () => {
  await pool.close()
  for (const s of servers) s.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A loopback TCP server that does `onSocket` with every connection; resolves to its target. */
async function server(onSocket: (sock: net.Socket) => void): Promise<SshTarget> {
  const s = net.createServer((sock) => {
    sock.on('error', () => undefined)
    onSocket(sock)
  })
  servers.push(s)
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  return { host: '127.0.0.1', user: 'tandem', port: (s.address() as net.AddressInfo).port }
}

async function failure(target: SshTarget, timeoutMs = 400): Promise<SshError> {
  const err = await pool.exec(target, 'true', { timeoutMs }).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(SshError)
  return err as SshError
}

describe('SshPool connection diagnostics', () => {
  it('a node that sends something other than an SSH identification answered, but not with SSH', async () => {
    const t = await server((sock) => sock.write('HTTP/1.1 400 Bad Request\r\n\r\n'))
    const err = await failure(t)
    expect(err.kind).toBe('unreachable')
    expect(err.message).toMatch(/answered, but not with SSH/)
    expect(err.message).toContain('HTTP/1.1 400 Bad Request')
    expect(err.message).not.toMatch(/no SSH answer/)
  })

  it('garbage followed by a close is named as what came back, not as a lost handshake', async () => {
    const t = await server((sock) => sock.end(Buffer.from([0x00, 0xff, 0x13, 0x37])))
    const err = await failure(t)
    expect(err.message).toMatch(/answered, but not with SSH/)
    expect(err.message).toContain('\\x00\\xff\\x137')
  })

  it('a node that accepts the connection and closes it at once says so', async () => {
    const t = await server((sock) => sock.end())
    const err = await failure(t)
    expect(err.message).toMatch(/accepted the TCP connection and closed it without sending anything/)
  })

  it('a connection reset right after connect says so', async () => {
    const t = await server((sock) => sock.resetAndDestroy())
    const err = await failure(t)
    expect(err.message).toMatch(/reset the connection right after it was accepted/)
  })

  it('a node that accepts TCP and never answers is a timeout, worded as one', async () => {
    const t = await server(() => undefined)
    const err = await failure(t, 300)
    expect(err.kind).toBe('unreachable')
    expect(err.message).toMatch(/no SSH answer within 0.3 s: the TCP connection was accepted but nothing came back/)
  })

  it('a port nobody listens on is a refused connection', async () => {
    const t = await server(() => undefined)
    const closed = servers.pop()!
    await new Promise((r) => closed.close(r))
    const err = await failure(t)
    expect(err.message).toMatch(/connection refused/)
    expect(err.message).not.toMatch(/no SSH answer/)
  })

  it('an SSH server whose handshake fails says the handshake failed', async () => {
    // A valid identification, then a packet that is not a key exchange.
    const t = await server((sock) => {
      sock.write('SSH-2.0-Broken_1.0\r\n')
      sock.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00]))
    })
    const err = await failure(t)
    expect(err.message).toMatch(/SSH handshake with SSH-2.0-Broken_1.0 failed/)
  })
})
