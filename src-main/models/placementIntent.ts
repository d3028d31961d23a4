import { z } from 'zod'
import { Layout, PlacementKeep, SwapPhase } from '../contract/models'
import { PlacementId } from '../contract/placements'
import { NodeName } from '../contract/schemas'
import { JobState, type JobRecord } from '../contract/system'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'

/**
 * What the operator asked to run where (DATA_DIR/placement-intent.json), written before a
 * placement job changes anything so a crash mid-job leaves a record of what was being done: each
 * placement's model, nodes, knobs and how long it is kept (pinned or an idle ttl), its recovery
 * counters, the placement jobs' own records (their outcome is reported after a restart), and the
 * stops that could not reach a node yet. Read entry by entry: a malformed one is reported and
 * skipped, the rest load.
 */

const Recovery = z.object({
  /** Relaunch attempts, newest last (the restart limiter prunes them to its window). */
  recent: z.array(z.number()).default([]),
  last: z.number().nullable().default(null),
  error: z.string().nullable().default(null),
  /** Past the restart limit: not tried again until the operator's Retry. */
  failed: z.boolean().default(false),
})

export const PlacementIntent = z.object({
  id: PlacementId,
  key: z.string().min(1).max(200),
  nodes: z.array(NodeName).min(1).max(64),
  layout: Layout.nullable().default(null),
  /** The knobs the model was placed with (the relaunch uses the catalog entry as it is then). */
  knobs: z.record(z.string(), z.unknown()).default({}),
  keep: PlacementKeep,
  origin: z.enum(['operator', 'on_demand']),
  since: z.number(),
  recovery: Recovery.default({ recent: [], last: null, error: null, failed: false }),
})
export type PlacementIntent = z.infer<typeof PlacementIntent>

/** A placement job's own record, kept through each phase so its outcome outlives a kill -9. */
const JobNote = z.object({
  id: z.string().max(100),
  title: z.string().max(500),
  action: z.enum(['place', 'stop']),
  placement_id: PlacementId,
  phase: SwapPhase,
  state: JobState,
  started_at: z.number(),
  finished_at: z.number().nullable(),
  error: z.string().max(4000).nullable(),
})
export type JobNote = z.infer<typeof JobNote>

/** A stop that could not verify its container gone on every node: retried by the reconciler. */
export const PendingStop = z.object({
  id: PlacementId,
  nodes: z.array(NodeName).min(1),
  served: z.string(),
  error: z.string().max(1000),
  since: z.number(),
})
export type PendingStop = z.infer<typeof PendingStop>

const IntentFileShape = z.object({
  intents: z.array(z.unknown()).default([]),
  jobs: z.array(z.unknown()).default([]),
  stops: z.array(z.unknown()).default([]),
})

/** Job records kept (the newest). */
const KEEP_JOBS = 20

export class PlacementIntents {
  private intents = new Map<string, PlacementIntent>()
  private jobs: JobNote[] = []
  private stops = new Map<string, PendingStop>()
  /** What was reported and skipped at load (Settings shows the log; tests read it). */
  readonly problems: string[] = []

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
    configured: readonly NodeName[],
    now: number,
  ) {
    const read = readStateFile(file, (t) => IntentFileShape.parse(JSON.parse(t)))
    if (read.kind === 'corrupt')
      logger.warn(replacedStateFileMessage('placement intent file', file, read, 'starting a fresh one'))
    if (read.kind !== 'ok') return
    read.value.intents.forEach((raw, i) => {
      const r = PlacementIntent.safeParse(raw)
      if (!r.success) return this.report(`entry ${i + 1} is malformed (${z.prettifyError(r.error).slice(0, 300)})`)
      const missing = r.data.nodes.filter((n) => !configured.includes(n))
      if (missing.length > 0)
        return this.report(`${r.data.key} on ${r.data.id} names ${missing.join(', ')}, which is not configured`)
      this.intents.set(r.data.id, r.data)
    })
    for (const raw of read.value.jobs) {
      const r = JobNote.safeParse(raw)
      if (r.success) this.jobs.push(interrupted(r.data, now))
    }
    for (const raw of read.value.stops) {
      const r = PendingStop.safeParse(raw)
      if (r.success && r.data.nodes.every((n) => configured.includes(n))) this.stops.set(r.data.id, r.data)
    }
  }

  list(): PlacementIntent[] {
    return [...this.intents.values()]
  }

  get(id: string): PlacementIntent | undefined {
    return this.intents.get(id)
  }

  /** Records (or replaces) an intent and writes the file before returning. */
  put(intent: PlacementIntent): void {
    this.intents.set(intent.id, intent)
    this.save()
  }

  remove(id: string): void {
    if (this.intents.delete(id)) this.save()
  }

  /** Removes some intents and records one, in one write. */
  replace(remove: readonly string[], put: PlacementIntent | null): void {
    for (const id of remove) this.intents.delete(id)
    if (put !== null) this.intents.set(put.id, put)
    this.save()
  }

  /** The job records, newest first (those from before a restart read as ended). */
  jobRecords(): readonly JobNote[] {
    return [...this.jobs].reverse()
  }

  /** A job's record: added, or changed in place, then written. */
  noteJob(note: JobNote): void {
    const at = this.jobs.findIndex((j) => j.id === note.id)
    if (at >= 0) this.jobs[at] = note
    else this.jobs.push(note)
    this.jobs.splice(0, Math.max(0, this.jobs.length - KEEP_JOBS))
    this.save()
  }

  pendingStops(): PendingStop[] {
    return [...this.stops.values()]
  }

  addStop(stop: PendingStop): void {
    this.stops.set(stop.id, stop)
    this.save()
  }

  removeStop(id: string): void {
    if (this.stops.delete(id)) this.save()
  }

  /** Writes everything now (atomic); a failed write is logged, never thrown. */
  save(): void {
    const body = { intents: this.list(), jobs: this.jobs, stops: this.pendingStops() }
    try {
      atomicWriteFile(this.file, JSON.stringify(body, null, 2) + '\n', { role: 'placement intent' })
    } catch (err) {
      this.logger.warn('could not save the placement intent', { error: err })
    }
  }

  private report(problem: string): void {
    const text = `placement intent file ${this.file}: ${problem}; skipped`
    this.problems.push(text)
    this.logger.warn(text)
  }
}

/** A job still running when the daemon died: ended, saying in which phase. */
function interrupted(note: JobNote, now: number): JobNote {
  if (note.state !== 'running') return note
  return {
    ...note,
    state: 'failed',
    finished_at: now,
    error: `Tandem restarted while this job was ${note.phase}; the placement's intent is kept and the reconciler takes it from there`,
  }
}

/** A kept job record as the job registry answers it. */
export function jobRecordOf(note: JobNote): JobRecord {
  const end = note.finished_at ?? note.started_at
  return {
    id: note.id,
    kind: 'swap',
    title: note.title,
    state: note.state,
    phase: note.phase,
    started_at: note.started_at,
    finished_at: note.finished_at,
    elapsed_s: Math.max(0, Math.round((end - note.started_at) / 1000)),
    progress: null,
    log: note.error === null ? [] : [note.error],
    result: null,
    error: note.error,
  }
}
