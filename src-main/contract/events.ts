import { z } from 'zod'
import { method, type ContractTable } from './define'
import { HardwareSnapshot, ServiceLabel, ServiceStatus, TransitionEvent } from './nodes'
import { JobRecord } from './system'
import { SwapStateEvent } from './models'
import { DeepHealthResult } from './services'
import { PlacementsChangedEvent } from './placements'

/**
 * Push events: name → payload. Services publish them on the core's event bus; one stream method
 * (`streamEvents`: SSE at GET /api/events, the event channel over IPC) delivers them. A new kind of
 * event is one entry here.
 */
export const ServiceStateChange = z.object({
  service: z.enum(['llm', 'asr', 'tts']),
  /** The label before this change; null on the first check since the daemon started. */
  previous: ServiceLabel.nullable(),
  status: ServiceStatus,
})

/** A job's state without its log (the job's own stream carries the log). */
export const JobUpdate = JobRecord.pick({
  id: true,
  kind: true,
  title: true,
  state: true,
  phase: true,
  started_at: true,
  finished_at: true,
  progress: true,
  error: true,
})

export const eventPayloads = {
  'connectivity.transition': TransitionEvent,
  'service.state': ServiceStateChange,
  'hardware.snapshot': HardwareSnapshot,
  'job.update': JobUpdate,
  /** An alias, kept for one release for outside clients, of the `step` that `placements.changed` carries. */
  'swap.state': SwapStateEvent,
  /** What runs where: the placements view, and the placement job's step that changed it. */
  'placements.changed': PlacementsChangedEvent,
  'deephealth.result': DeepHealthResult,
} as const

export type EventName = keyof typeof eventPayloads
export type EventPayload<K extends EventName> = z.infer<(typeof eventPayloads)[K]>

/** One delivered event: `seq` increases by one per event and is the resume cursor (SSE `id:`). */
export type PushEvent = {
  [K in EventName]: { seq: number; at: number; name: K; data: EventPayload<K> }
}[EventName]

/**
 * Sent first when a stream resumes from a `seq` the daemon no longer holds (too old, or from before
 * a restart): the client's view may have missed events and should be re-read.
 */
export const Resync = z.object({
  seq: z.number().int().min(0),
  at: z.number(),
  name: z.literal('resync'),
  data: z.object({ reason: z.enum(['gap', 'restart']) }),
})
export type Resync = z.infer<typeof Resync>

export type EventStreamItem = PushEvent | Resync

function envelope(name: EventName) {
  return z.object({ seq: z.number().int().min(1), at: z.number(), name: z.literal(name), data: eventPayloads[name] })
}

// Built from the table so adding an event is one entry; the cast names the union zod cannot infer from a loop.
export const EventStreamItem = z.discriminatedUnion('name', [
  Resync,
  ...(Object.keys(eventPayloads) as EventName[]).map(envelope),
]) as unknown as z.ZodType<EventStreamItem>

export const eventsContract = {
  streamEvents: method({
    summary: 'Push events (connectivity, service state, hardware, jobs): live; resumes after Last-Event-ID',
    http: 'GET /api/events',
    stream: true,
    input: z.object({ after: z.coerce.number().int().min(0).optional() }),
    output: EventStreamItem,
  }),
} satisfies ContractTable
