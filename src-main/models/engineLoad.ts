import { httpCall } from '../lib/httpClient'
import type { JobControl } from '../platform/jobs'
import type { SshPool, SshTarget } from '../ssh/pool'
import { containerTailCommand } from './launch'

/**
 * Watching an engine come up on a placement's head: its /v1/models until the served name appears,
 * and the container's log meanwhile (into the job), failing fast on the lines that mean it will not.
 */

/** Lines in the llm container's log that mean the engine will not come up. */
const FATAL =
  /Engine core initialization failed|EngineCore failed to start|OutOfMemoryError|CUDA out of memory|CUDA error|cudaErrorUnknown|Traceback \(most recent call last\)/

const PROBE_MS = 5_000
const TAIL_LINES = 60

/** Raised while loading: what went wrong and the container's last log lines. */
export class LoadFailed extends Error {
  constructor(
    message: string,
    readonly lines: readonly string[],
  ) {
    super(message)
  }
}

/** Where an engine runs: its origin (null: unknown) and the head that runs its container. */
export interface EngineSite {
  readonly baseUrl: string | null
  readonly head: SshTarget | null
  readonly container: string
}

/** What the engine serves now (its /v1/models ids), or null when it does not answer. */
export async function servedNow(baseUrl: string | null, timeoutMs = PROBE_MS): Promise<string[] | null> {
  if (baseUrl === null) return null
  try {
    const res = await httpCall(`${baseUrl}/v1/models`, { signal: AbortSignal.timeout(timeoutMs) })
    if (!res.ok) {
      res.discard()
      return null
    }
    const body = (await res.json()) as { data?: { id?: unknown }[] }
    return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string')
  } catch {
    return null
  }
}

/** Whether the engine's container runs (null: the head could not be asked) and its last log lines. */
export async function containerTail(
  pool: Pick<SshPool, 'exec'>,
  site: EngineSite,
): Promise<{ running: boolean | null; lines: string[] }> {
  if (site.head === null) return { running: null, lines: [] }
  try {
    const r = await pool.exec(site.head, containerTailCommand(site.container, TAIL_LINES), { timeoutMs: PROBE_MS * 2 })
    const [state, ...lines] = r.stdout.split('\n')
    return { running: state === 'true', lines: lines.filter((l) => l !== '') }
  } catch {
    return { running: null, lines: [] }
  }
}

export interface WaitOptions {
  readonly pool: Pick<SshPool, 'exec'>
  readonly now: () => number
  readonly loadTimeoutS: number
  readonly pollMs: number
  /** The ETA to report while waiting (null: none known). */
  readonly etaS: () => number | null
}

/** Polls the engine until it names `served` (resolving with every id it lists); the container log goes to the job meanwhile. */
export async function waitServed(job: JobControl, site: EngineSite, served: string, o: WaitOptions): Promise<string[]> {
  const deadline = o.now() + o.loadTimeoutS * 1000
  const tail = new LogTail()
  for (;;) {
    if (job.signal.aborted) throw job.signal.reason
    const names = await servedNow(site.baseUrl)
    if (names?.includes(served)) return names
    const look = await containerTail(o.pool, site)
    for (const line of tail.fresh(look.lines)) job.log(line)
    const fatal = look.lines.find((l) => FATAL.test(l))
    if (fatal !== undefined) throw new LoadFailed(`the engine failed to load ${served}: ${fatal.trim()}`, look.lines)
    if (look.running === false)
      throw new LoadFailed(`the llm container stopped while ${served} was loading`, look.lines)
    if (o.now() > deadline) throw new LoadFailed(`${served} did not answer within ${o.loadTimeoutS} s`, look.lines)
    const eta = o.etaS()
    if (eta !== null) job.progress({ eta_s: eta })
    await pause(o.pollMs, job.signal)
  }
}

/** Which lines of a container log tail are new since the last look (tails overlap). */
class LogTail {
  private seen: string[] = []

  fresh(lines: readonly string[]): string[] {
    const last = this.seen[this.seen.length - 1]
    let from = 0
    if (last !== undefined) {
      const at = lines.lastIndexOf(last)
      from = at === -1 ? 0 : at + 1
    }
    this.seen = [...lines]
    return lines.slice(from)
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms)
    function done(): void {
      clearTimeout(t)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}
