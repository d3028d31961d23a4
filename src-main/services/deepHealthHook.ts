import type { EventBus } from '../platform/eventBus'
/** The speech and llm services a deep-health probe can check. */
export type ProbedService = 'asr' | 'tts' | 'llm'

/** A placement other than node1's, probed as an llm: `llm@<placement id>` (docs/placements.md, Deep health). */
export type PlacementSubject = `llm@${string}`

/** What deep health probes: a service, or a placement's engine. */
export type ProbeSubject = ProbedService | PlacementSubject

/** The deep-health subject of a placement: the one including node1 is the llm service, as before placements. */
export function placementSubject(placementId: string): 'llm' | PlacementSubject {
  return placementId.split('+').includes('node1') ? 'llm' : `llm@${placementId}`
}

/**
 * What the gateway needs from deep health (spec 1, 7): "start a probe of this service now, in the
 * background". The services domain implements it with real probes and its restart rate limits;
 * the gateway never waits for it.
 */
export interface DeepHealthHook {
  requestProbe(service: ProbeSubject, reason: string): ProbeStart
}

/** What became of a probe request: one started now, one was already running, or none can run. */
export type ProbeStart = 'started' | 'running' | 'unavailable'

/** The part of a 503's detail that says what deep health is doing about it (true in each case). */
export function probeWording(service: ProbeSubject, start: ProbeStart): string {
  if (start === 'started') return `a deep-health probe of the ${service} was started`
  if (start === 'running') return `a deep-health probe of the ${service} is already running`
  return `no deep-health probe of the ${service} could be started`
}

/** Where deep health records recoveries: the connectivity store's `report` (spec 1, 2.7). */
export interface ReportSink {
  report(
    subject: string,
    input: { ok: boolean; source?: string | null; error?: string | null; detail?: string | null; ms?: number | null },
  ): Promise<unknown>
}

/**
 * After a placement job leaves a model serving (a swap, a placement, a relaunch), its engine is
 * probed at once rather than at the next round, so its card and row show the new engine's
 * health and no result from before it stays on. Returns the unsubscribe.
 */
export function probeAfterPlacementJobs(bus: Pick<EventBus, 'subscribe'>, hook: DeepHealthHook): () => void {
  return bus.subscribe((ev) => {
    if (ev.name !== 'placements.changed' || ev.data.step?.phase !== 'ready') return
    const { placement_id: id, key, loaded } = ev.data.step
    // A stop leaves nothing to probe (node1's llm then has no model loaded).
    if (ev.data.changing?.action === 'stop' || (placementSubject(id) === 'llm' && loaded === null)) return
    hook.requestProbe(placementSubject(id), `a placement job left ${key} serving on ${id}`)
  })
}
