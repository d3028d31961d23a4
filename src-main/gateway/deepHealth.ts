import type { Logger } from '../core/logger'

/** The speech and llm services a deep-health probe can check. */
export type ProbedService = 'asr' | 'tts' | 'llm'

/**
 * What the gateway needs from deep health (spec 1, 7): "start a probe of this service now, in the
 * background". The services domain implements it with real probes and its restart rate limits;
 * the gateway never waits for it.
 */
export interface DeepHealthHook {
  requestProbe(service: ProbedService, reason: string): void
}

/** Where a probe request is recorded until deep health exists: the connectivity store's `report` (spec 1, 2.7). */
export interface ReportSink {
  report(subject: string, input: { ok: boolean; source?: string | null; error?: string | null }): Promise<unknown>
}

/**
 * The interim hook: logs each request and records it as a report (source `gateway`) when a
 * connectivity store is given. Repeats for one service within `minGapMs` are logged once.
 */
export function loggingDeepHealth(
  logger: Logger,
  sink?: ReportSink,
  now: () => number = Date.now,
  minGapMs = 10_000,
): DeepHealthHook {
  const last = new Map<ProbedService, number>()
  return {
    requestProbe(service, reason) {
      const t = now()
      const prev = last.get(service)
      if (prev !== undefined && t - prev < minGapMs) return
      last.set(service, t)
      logger.warn('deep-health probe requested', { service, reason })
      sink
        ?.report(service, { ok: false, source: 'gateway', error: reason })
        .catch((err: unknown) => logger.error('recording the probe request failed', { error: err }))
    },
  }
}
