import type { Logger } from '../lib/logger'
import type { ExecResult, SshPool, SshTarget } from './pool'
import { shq } from './quote'

/** The wrapper prints this before the script's own output: the remote process group to stop. */
export const PROCESS_GROUP_MARK = '__tandem_pgid '
const KILL_TIMEOUT_MS = 10_000

/**
 * The shell lines that start a long script in its own process group (so stopping it stops
 * everything it spawned: the hub CLI, rsync, docker build), announce the group, then wait for it.
 * `call` is already quoted by the caller.
 */
export function inOwnProcessGroup(call: string, opts: { mergeStderr?: boolean } = {}): string[] {
  return [
    `setsid ${call} </dev/null${opts.mergeStderr ? ' 2>&1' : ''} & pid=$!`,
    `echo "${PROCESS_GROUP_MARK}$pid"`,
    'wait "$pid"',
  ]
}

/** The script printed nothing for `idleMs`: it was stopped. */
export class RemoteIdle extends Error {
  constructor(
    readonly idleMs: number,
    options?: { cause?: unknown },
  ) {
    super(`no output for ${Math.round(idleMs / 1000)} s`, options)
    this.name = 'RemoteIdle'
  }
}

export interface GroupRunOptions {
  /** Aborted when the job is cancelled: the remote group is stopped. */
  readonly signal: AbortSignal
  /** Stop the script when it prints nothing for this long. */
  readonly idleMs: number
  /** Each line of the script's output (the group announcement is not passed on). */
  onLine(line: string): void
  onGroup?(pgid: number): void
  readonly logger: Logger
  /** Names the script in the log when stopping it fails. */
  readonly what: string
}

/**
 * Runs a command built with `inOwnProcessGroup`. On cancel or silence the whole remote group gets
 * TERM, then KILL, over a fresh channel: closing the SSH channel alone leaves the script running.
 * Silence is reported as RemoteIdle; anything else is rethrown as it came.
 */
export async function runInProcessGroup(
  pool: Pick<SshPool, 'exec'>,
  target: SshTarget,
  command: string,
  opts: GroupRunOptions,
): Promise<ExecResult> {
  let pgid: number | null = null
  const idle = new AbortController()
  let idleTimer = setTimeout(() => idle.abort(), opts.idleMs)
  const onLine = (line: string): void => {
    clearTimeout(idleTimer)
    idleTimer = setTimeout(() => idle.abort(), opts.idleMs)
    // Only the wrapper's first line names the group; the script cannot override it.
    if (pgid === null && line.startsWith(PROCESS_GROUP_MARK)) {
      const n = Number(line.slice(PROCESS_GROUP_MARK.length).trim())
      if (Number.isInteger(n) && n > 1) {
        pgid = n
        opts.onGroup?.(n)
      }
      return
    }
    opts.onLine(line)
  }
  try {
    return await pool.exec(target, command, { onLine, signal: AbortSignal.any([opts.signal, idle.signal]) })
  } catch (err) {
    if (opts.signal.aborted || idle.signal.aborted) await stopGroup(pool, target, pgid, opts)
    if (idle.signal.aborted && !opts.signal.aborted) throw new RemoteIdle(opts.idleMs, { cause: err })
    throw err
  } finally {
    clearTimeout(idleTimer)
  }
}

async function stopGroup(
  pool: Pick<SshPool, 'exec'>,
  target: SshTarget,
  pgid: number | null,
  opts: GroupRunOptions,
): Promise<void> {
  if (pgid === null) return
  const g = shq(`-${pgid}`)
  const command = `kill -TERM -- ${g} 2>/dev/null; sleep 1; kill -KILL -- ${g} 2>/dev/null; true`
  try {
    await pool.exec(target, command, { timeoutMs: KILL_TIMEOUT_MS, fresh: true })
  } catch (err) {
    opts.logger.warn(`could not stop ${opts.what} on ${target.host}`, {
      error: err instanceof Error ? err.message : String(err),
    })
  }
}
