import type { NodeName } from '../contract/schemas'
import { servedNow } from './engineLoad'

/**
 * What each engine serves, learned from its own /v1/models and learned again every few seconds
 * (docs/guide/gateway.md, Routing): the gateway routes on what the engines say, never on SSH, so an
 * engine that comes up after Tandem started is used within seconds and a hung SSH connection to its
 * node stops nothing while the engine answers.
 */

/** Between two rounds of looks. */
export const WATCH_INTERVAL_MS = 3_000
/** One look's limit: an engine that says nothing this long is not answering. */
export const LOOK_TIMEOUT_MS = 1_500
/** A round asked for (a request that matched nothing) this soon after the last one reuses it. */
const MIN_GAP_MS = 1_000

export interface EngineWatchDeps {
  /** The engines to look at: each node that may head a placement, with its engine's origin. */
  readonly engines: () => ReadonlyMap<NodeName, string>
  readonly now: () => number
  /** Called with every look's result (null: the engine did not answer), in the order they come. */
  readonly seen: (head: NodeName, names: readonly string[] | null) => void
  readonly intervalMs?: number
  readonly timeoutMs?: number
}

export class EngineWatch {
  /** The ids each engine listed at its last look, by origin; null when it did not answer. */
  private readonly looks = new Map<string, readonly string[] | null>()
  /** Bumped by `record`: a look begun before it is out of date when it lands, and dropped. */
  private readonly generation = new Map<string, number>()
  private round: Promise<void> | null = null
  private lastRound = -Infinity
  private timer: NodeJS.Timeout | null = null

  constructor(private readonly deps: EngineWatchDeps) {}

  start(): void {
    this.timer ??= setInterval(() => void this.refresh(true), this.deps.intervalMs ?? WATCH_INTERVAL_MS)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  /** The ids an engine listed at its last look; null when it did not answer or was never looked at. */
  names(base: string | null): readonly string[] | null {
    return base === null ? null : (this.looks.get(base) ?? null)
  }

  /** What is known without a look (the start's probes, an engine a job just brought up or stopped). */
  record(base: string, names: readonly string[] | null): void {
    this.looks.set(base, names)
    this.generation.set(base, (this.generation.get(base) ?? 0) + 1)
  }

  /** Whether a round asked for now would look again (none ran in the last second). */
  due(): boolean {
    return this.round === null && this.deps.now() - this.lastRound >= MIN_GAP_MS
  }

  /**
   * Looks at every engine (each look bounded by its timeout). One round at a time: a round in
   * progress is joined; one asked for within a second of the last is not made (unless `force`).
   */
  refresh(force = false): Promise<void> {
    if (this.round !== null) return this.round
    if (!force && !this.due()) return Promise.resolve()
    this.round = this.lookAll().finally(() => {
      this.round = null
      this.lastRound = this.deps.now()
    })
    return this.round
  }

  private async lookAll(): Promise<void> {
    const timeout = this.deps.timeoutMs ?? LOOK_TIMEOUT_MS
    const seen = new Set<string>()
    const looks: Promise<void>[] = []
    for (const [head, base] of this.deps.engines()) {
      // Two names for one origin (a test rig, a misconfiguration) are looked at once.
      if (seen.has(base)) continue
      seen.add(base)
      const generation = this.generation.get(base) ?? 0
      looks.push(
        servedNow(base, timeout).then((names) => {
          if ((this.generation.get(base) ?? 0) !== generation) return
          this.looks.set(base, names)
          this.deps.seen(head, names)
        }),
      )
    }
    await Promise.all(looks)
  }
}
