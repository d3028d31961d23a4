/**
 * What deep health remembers per subject (a service, or `llm@<placement id>`): the last result and
 * the auto-restart counters, kept in a bounded state file written atomically so a daemon restart
 * keeps them. A malformed file is moved aside and deep health starts fresh.
 */
import { z } from 'zod'
import type { Clock } from '../lib/clock'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'
import { DeepHealthResult, PlacementProbeSubject } from '../contract/services'
import type { PlacementSubject, ProbedService, ProbeSubject } from './deepHealthHook'

/** The services deep health probes, in the order a round starts them. */
export const PROBED_SERVICES: readonly ProbedService[] = ['asr', 'tts', 'llm']

/** At most this many auto-restart times per service are kept (the cap window needs far fewer). */
const MAX_KEPT_RESTARTS = 20
/** At most this many placement subjects are kept (one per node at most is placed at a time). */
const MAX_KEPT_PLACEMENTS = 64

/** The deep-health file: per subject (a service or `llm@<placement id>`) its last result and restart counters. */
const SavedState = z.object({
  services: z.record(
    z.string().max(404),
    z.object({
      last: DeepHealthResult.nullable(),
      recent: z.array(z.number()).max(MAX_KEPT_RESTARTS),
      total: z.number().int().min(0),
      last_restart: z.number().nullable(),
    }),
  ),
})

export function isPlacementSubject(subject: string): subject is PlacementSubject {
  return PlacementProbeSubject.safeParse(subject).success
}

export function isProbedService(subject: string): subject is ProbedService {
  return (PROBED_SERVICES as readonly string[]).includes(subject)
}

/** A name deep health can probe: a service, or a placement's `llm@<id>`. */
export function isProbeSubject(subject: string): subject is ProbeSubject {
  return isProbedService(subject) || isPlacementSubject(subject)
}

/** Which probe a subject gets: a placement's engine is probed as an llm. */
export function kindOf(subject: ProbeSubject): ProbedService {
  return isProbedService(subject) ? subject : 'llm'
}

export interface Counters {
  /** Auto-restart attempts, newest last (pruned to the cap window). */
  recent: number[]
  total: number
  last: number | null
}

export class DeepHealthRecords {
  readonly last = new Map<ProbeSubject, DeepHealthResult>()
  readonly counters = new Map<ProbeSubject, Counters>()

  constructor(
    private readonly o: {
      readonly file?: string | null
      readonly clock: Clock
      readonly logger: Logger
      /** The subjects a round probes now (pruning keeps those first). */
      readonly subjects: () => ProbeSubject[]
    },
  ) {}

  /** Reads the saved results and counters; a malformed file is moved aside and deep health starts fresh. */
  load(): void {
    const file = this.o.file
    if (!file) return
    const res = readStateFile(file, (t) => SavedState.parse(JSON.parse(t)), this.o.clock.now())
    if (res.kind === 'corrupt')
      this.o.logger.warn(replacedStateFileMessage('deep-health results', file, res, 'starting with no results'))
    if (res.kind !== 'ok') return
    for (const [service, saved] of Object.entries(res.value.services)) {
      if (!isProbeSubject(service)) continue
      if (saved.last !== null && saved.last.service === service) this.last.set(service, saved.last)
      this.counters.set(service, { recent: saved.recent, total: saved.total, last: saved.last_restart })
    }
    this.prune()
  }

  /** Keeps at most MAX_KEPT_PLACEMENTS placement subjects: those placed now, then the most recently active. */
  private prune(): void {
    const kept = [...new Set([...this.last.keys(), ...this.counters.keys()])].filter(isPlacementSubject)
    if (kept.length <= MAX_KEPT_PLACEMENTS) return
    const placed = new Set<ProbeSubject>(this.o.subjects())
    const recency = (s: ProbeSubject): number =>
      placed.has(s) ? Number.MAX_SAFE_INTEGER : Math.max(this.last.get(s)?.at ?? 0, this.counters.get(s)?.last ?? 0)
    kept.sort((a, b) => recency(b) - recency(a))
    for (const s of kept.slice(MAX_KEPT_PLACEMENTS)) {
      this.last.delete(s)
      this.counters.delete(s)
    }
  }

  /** Writes the results and counters atomically; a failed write is logged and tried again with the next result. */
  save(): void {
    const file = this.o.file
    if (!file) return
    this.prune()
    const services: z.infer<typeof SavedState>['services'] = {}
    const placements = [...new Set([...this.last.keys(), ...this.counters.keys()])].filter(isPlacementSubject)
    for (const service of [...PROBED_SERVICES, ...placements]) {
      const c = this.countersOf(service)
      services[service] = {
        last: this.last.get(service) ?? null,
        recent: c.recent.slice(-MAX_KEPT_RESTARTS),
        total: c.total,
        last_restart: c.last,
      }
    }
    try {
      atomicWriteFile(file, JSON.stringify({ services }) + '\n', { mode: 0o600, role: 'deep-health results' })
    } catch (err) {
      this.o.logger.warn('deep-health results could not be saved', { file, error: err })
    }
  }

  countersOf(service: ProbeSubject): Counters {
    let c = this.counters.get(service)
    if (!c) {
      c = { recent: [], total: 0, last: null }
      this.counters.set(service, c)
    }
    return c
  }
}
