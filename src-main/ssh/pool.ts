import net from 'node:net'
import ssh2 from 'ssh2'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { HostKeyStore } from './hostKeys'
import { ConnectAttempt, type ConnectFailure } from './connectDiagnosis'
import { connectError, hostKeyRefusal, SshError } from './sshErrors'
import { StreamText } from './streamText'

export { SshError, type SshErrorKind } from './sshErrors'

export interface SshTarget {
  readonly host: string
  readonly user: string
  readonly port: number
}

/** Spec 1, section 8: state and hardware probes. */
export const PROBE_TIMEOUT_MS = 6000
/** Spec 1, section 8: how long an 'unreachable' result is remembered. */
export const UNREACHABLE_TTL_MS = 25_000
/** OpenSSH allows 10 sessions per connection (MaxSessions); stay under it. */
const MAX_CHANNELS_PER_CONNECTION = 8

export interface ExecOptions {
  /** Whole-call deadline (connect + run). Probes pass PROBE_TIMEOUT_MS. */
  timeoutMs?: number
  signal?: AbortSignal
  /** Called per output line as it arrives (long jobs). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void
  /** Written to the command's stdin, then closed. */
  stdin?: string | Buffer
  /** Ignore a cached 'unreachable' result and try now (e.g. right after a wake). */
  fresh?: boolean
}

export interface ExecResult {
  /** Exit status; null when the command died by a signal or the channel closed without one. */
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

export interface SshPoolOptions {
  privateKey: string
  hostKeys: HostKeyStore
  clock: Clock
  logger: Logger
  /** Connect timeout for commands without their own deadline. */
  connectTimeoutMs?: number
  unreachableTtlMs?: number
  /** False: a new connection per command (the benchmark's cold path). */
  reuse?: boolean
}

interface Connection {
  readonly client: ssh2.Client
  ready: boolean
  active: number
  readonly waiters: (() => void)[]
}

export function targetKey(t: SshTarget): string {
  return `${t.user}@${t.host}:${t.port}`
}

/**
 * One persistent ssh2 connection per (host, user, port); each command is a channel on it. A lost
 * connection is dropped and the next command reconnects. Connection failures are remembered for
 * 25 s so a dead node costs one timeout, not one per probe.
 */
export class SshPool {
  private readonly conns = new Map<string, Promise<Connection>>()
  /** The settled connection behind each entry of `conns`, so a dead one can be dropped at once. */
  private readonly live = new Map<string, Connection>()
  private readonly unreachable = new Map<string, { until: number; error: SshError }>()
  /** How many connections to each target have become ready: what is learned "per connection" keys on it. */
  private readonly connections = new Map<string, number>()
  private closed = false

  constructor(private readonly opts: SshPoolOptions) {}

  async exec(target: SshTarget, command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closed) throw new SshError('channel', 'SSH pool is closed')
    const key = targetKey(target)
    const started = Date.now()
    const deadline = options.timeoutMs !== undefined ? started + options.timeoutMs : null
    if (options.signal?.aborted) throw new SshError('cancelled', 'cancelled')
    if (!options.fresh) this.failIfUnreachable(key)

    let busyRetries = 0
    for (let attempt = 0; ; attempt++) {
      // The connection is shared: one caller's cancel must not fail the others waiting on it.
      const conn = await abortable(
        this.connection(target, deadline, this.opts.reuse === false ? options.signal : undefined),
        options.signal,
      )
      try {
        return await this.run(conn, command, options, deadline)
      } catch (err) {
        if (err instanceof ChannelBusy) {
          const delay = busyRetryDelay(busyRetries, deadline)
          if (delay === null) throw new SshError('channel', `${key}: ${err.message}`)
          busyRetries++
          attempt--
          await new Promise((r) => setTimeout(r, delay))
          continue
        }
        // The pooled connection died under us (idle drop, node rebooted): reconnect once.
        if (err instanceof StaleConnection && attempt === 0) {
          this.drop(key, conn)
          continue
        }
        throw this.lostConnection(key, conn, err)
      } finally {
        if (this.opts.reuse === false) conn.client.end()
      }
    }
  }

  /** Fails at once, as the last attempt did, while the target's 'unreachable' result is remembered. */
  private failIfUnreachable(key: string): void {
    const cached = this.unreachable.get(key)
    if (cached && cached.until > this.opts.clock.now())
      throw new SshError(cached.error.kind, cached.error.message, true, cached.error.presentedFingerprint)
  }

  /** The error a command fails with once its connection is gone for good (others pass through). */
  private lostConnection(key: string, conn: Connection, err: unknown): unknown {
    if (err instanceof StaleConnection) return new SshError('unreachable', `${key}: connection lost: ${err.message}`)
    if (err instanceof SilentConnection) {
      this.drop(key, conn)
      const error = new SshError('unreachable', `${key}: ${err.message}`)
      this.remember(key, error)
      return error
    }
    return err
  }

  private remember(key: string, error: SshError): void {
    this.unreachable.set(key, {
      until: this.opts.clock.now() + (this.opts.unreachableTtlMs ?? UNREACHABLE_TTL_MS),
      error,
    })
  }

  /** The number of the target's current connection (0 before the first): changes when it reconnects. */
  connectionNumber(target: SshTarget): number {
    return this.connections.get(targetKey(target)) ?? 0
  }

  /** When the target's remembered 'unreachable' result ends and the next command tries it for real (null: none). */
  retryAt(target: SshTarget): number | null {
    const until = this.unreachable.get(targetKey(target))?.until
    return until !== undefined && until > this.opts.clock.now() ? until : null
  }

  /** Forgets a cached 'unreachable' result (after a wake, or a host key reset). */
  clearUnreachable(target: SshTarget): void {
    this.unreachable.delete(targetKey(target))
  }

  /** Forgets cached failures of every user on one host and port (after its host key was trusted). */
  clearUnreachableHost(host: string, port: number): void {
    const suffix = `@${host}:${port}`
    for (const key of [...this.unreachable.keys()]) if (key.endsWith(suffix)) this.unreachable.delete(key)
  }

  /** Closes every connection. Commands in flight fail. */
  async close(): Promise<void> {
    this.closed = true
    const all = [...this.conns.values()]
    this.conns.clear()
    await Promise.all(
      all.map((p) =>
        p.then(
          (c) => c.client.end(),
          () => undefined,
        ),
      ),
    )
  }

  private connection(target: SshTarget, deadline: number | null, signal?: AbortSignal): Promise<Connection> {
    const key = targetKey(target)
    if (this.opts.reuse !== false) {
      const existing = this.conns.get(key)
      if (existing) return existing
    }
    const p = this.connect(target, deadline, signal)
    if (this.opts.reuse !== false) {
      this.conns.set(key, p)
      p.catch(() => {
        if (this.conns.get(key) === p) this.conns.delete(key)
      })
    }
    return p
  }

  private connect(target: SshTarget, deadline: number | null, signal?: AbortSignal): Promise<Connection> {
    const key = targetKey(target)
    return new Promise<Connection>((resolve, reject) => {
      const client = new ssh2.Client()
      const conn: Connection = { client, ready: false, active: 0, waiters: [] }
      const attempt = new ConnectAttempt(target.host, target.port)
      let hostKeyProblem: SshError | null = null
      let settled = false
      const timeoutMs = deadline !== null ? Math.max(1, deadline - Date.now()) : (this.opts.connectTimeoutMs ?? 20_000)
      const fail = (err: SshError, remember: boolean): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (remember) this.remember(key, err)
        client.end()
        client.destroy?.()
        reject(err)
      }
      const failed = (failure: ConnectFailure): void =>
        fail(hostKeyProblem ?? connectError(key, attempt, failure), true)
      const onAbort = (): void => fail(new SshError('cancelled', 'cancelled'), false)
      signal?.addEventListener('abort', onAbort, { once: true })
      const timer = setTimeout(() => failed({ kind: 'timeout', ms: timeoutMs }), timeoutMs)
      client.on('ready', () => {
        if (settled) return client.end()
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.ready(key, conn)
        resolve(conn)
      })
      client.on('error', (err: Error & { level?: string; code?: string }) => {
        if (!settled) return failed({ kind: 'error', error: err })
        this.opts.logger.debug('ssh connection error', { target: key, error: err.message })
      })
      client.on('close', () => {
        conn.ready = false
        this.forget(key, conn)
        if (!settled) failed({ kind: 'closed' })
      })
      // Tandem's own socket, so the attempt can see whether TCP connected and what came back first.
      const sock = net.connect({ host: target.host, port: target.port })
      try {
        client.connect({
          sock,
          username: target.user,
          privateKey: this.opts.privateKey,
          readyTimeout: timeoutMs + 1000,
          keepaliveInterval: 15_000,
          keepaliveCountMax: 3,
          hostVerifier: (blob: Buffer) => {
            const res = this.verifyHostKey(target, key, blob)
            if (res !== null) hostKeyProblem = res
            return res === null
          },
        })
      } catch (err) {
        // ssh2 refused the options (an unusable key): nothing will use the socket.
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        sock.destroy()
        return reject(err as Error)
      }
      attempt.watch(sock)
    })
  }

  /** Null when the presented key is trusted; the refusal otherwise. */
  private verifyHostKey(target: SshTarget, key: string, blob: Buffer): SshError | null {
    const res = this.opts.hostKeys.check(target.host, target.port, blob)
    if (!res.ok) return hostKeyRefusal(target, res)
    if (res.firstUse) this.opts.logger.info('trusted new SSH host key', { target: key, fingerprint: res.fingerprint })
    return null
  }

  /** A connection became ready: pooled, and the target's remembered failure forgotten. */
  private ready(key: string, conn: Connection): void {
    conn.ready = true
    if (this.opts.reuse !== false) this.live.set(key, conn)
    // Small request/response exchanges: without this, delayed ACKs add ~40 ms per command.
    conn.client.setNoDelay(true)
    this.unreachable.delete(key)
    this.connections.set(key, (this.connections.get(key) ?? 0) + 1)
  }

  private drop(key: string, conn: Connection): void {
    conn.ready = false
    this.forget(key, conn)
    conn.client.end()
  }

  private forget(key: string, conn: Connection): void {
    if (this.live.get(key) !== conn) return
    this.live.delete(key)
    this.conns.delete(key)
  }

  private async acquire(conn: Connection): Promise<void> {
    if (conn.active < MAX_CHANNELS_PER_CONNECTION) {
      conn.active++
      return
    }
    await new Promise<void>((resolve) => conn.waiters.push(resolve))
    conn.active++
  }

  private release(conn: Connection): void {
    conn.active--
    conn.waiters.shift()?.()
  }

  private async run(
    conn: Connection,
    command: string,
    options: ExecOptions,
    deadline: number | null,
  ): Promise<ExecResult> {
    if (!conn.ready) throw new StaleConnection('not connected')
    await this.acquire(conn)
    try {
      return await new Promise<ExecResult>((resolve, reject) => {
        let channel: ssh2.ClientChannel | null = null
        let done = false
        const out = new StreamText(options.onLine && ((l) => options.onLine!(l, 'stdout')))
        const err = new StreamText(options.onLine && ((l) => options.onLine!(l, 'stderr')))
        let code: number | null = null
        let sig: string | null = null

        const finish = (error: Error | null): void => {
          if (done) return
          done = true
          if (timer) clearTimeout(timer)
          options.signal?.removeEventListener('abort', onAbort)
          if (error) {
            if (channel) {
              try {
                channel.signal('KILL')
              } catch {
                // channel already gone
              }
              channel.close()
            }
            return reject(error)
          }
          resolve({ code, signal: sig, stdout: out.text(), stderr: err.text() })
        }
        const onAbort = (): void => finish(new SshError('cancelled', 'cancelled'))
        options.signal?.addEventListener('abort', onAbort, { once: true })
        const remaining = deadline !== null ? deadline - Date.now() : null
        const timer =
          remaining !== null
            ? setTimeout(() => finish(deadlineError(channel !== null, options.timeoutMs ?? 0)), Math.max(1, remaining))
            : null

        const onChannel = (e: Error | undefined, stream: ssh2.ClientChannel): void => {
          if (e) {
            const msg = e.message
            // Channel refused on a live connection vs. a connection that is gone.
            if (!conn.ready || /not connected|no response|closed/i.test(msg)) return finish(new StaleConnection(msg))
            // The server is still tearing down earlier sessions (MaxSessions): try again shortly.
            if (/open failed|channel open failure/i.test(msg)) return finish(new ChannelBusy(msg))
            return finish(new SshError('channel', msg))
          }
          channel = stream
          if (done) {
            stream.close()
            return
          }
          stream.on('data', (chunk: Buffer) => out.write(chunk))
          stream.stderr.on('data', (chunk: Buffer) => err.write(chunk))
          stream.on('exit', (c: number | null, s?: string) => {
            if (typeof c === 'number') code = c
            else if (s) sig = s
          })
          stream.on('close', () => {
            out.end()
            err.end()
            finish(null)
          })
          if (options.stdin !== undefined) stream.end(options.stdin)
          else stream.end()
        }
        try {
          conn.client.exec(command, onChannel)
        } catch (e) {
          // ssh2 throws synchronously when the socket is already gone.
          finish(new StaleConnection((e as Error).message))
        }
      })
    } finally {
      this.release(conn)
    }
  }
}

class StaleConnection extends Error {}
class ChannelBusy extends Error {}

/** The back-off while every channel of the connection is taken; null after 6 retries or past the deadline. */
function busyRetryDelay(retries: number, deadline: number | null): number | null {
  const delay = 25 * 2 ** retries
  return retries < 6 && (deadline === null || Date.now() + delay < deadline) ? delay : null
}

function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new SshError('cancelled', 'cancelled'))
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(e)
      },
    )
  })
}
class SilentConnection extends Error {}

/** A deadline passed: with no channel yet the connection itself is dead (a silent node), else the command ran long. */
function deadlineError(channelOpened: boolean, timeoutMs: number): Error {
  const s = Math.round(timeoutMs / 100) / 10
  return channelOpened
    ? new SshError('timeout', `command timed out after ${s} s`)
    : new SilentConnection(`no answer on the SSH connection within ${s} s`)
}
