/**
 * What a deep-health probe reports and how long it may take; which failures mean a wedged
 * container. The probes themselves speak each service's protocol and are passed in
 * (gateway/deepHealthProbes.ts).
 */
import type { ProbedService } from './deepHealthHook'

/** How long each probe may take before it counts as failing (a hung service must not hold a probe forever). */
export const PROBE_TIMEOUTS_MS: Readonly<Record<ProbedService, number>> = { asr: 30_000, tts: 30_000, llm: 60_000 }

/** Spec 1, 6.2 rule 2: errors that mean the container is wedged and a restart may clear it. */
const WEDGE_PATTERNS: readonly { name: string; test: RegExp }[] = [
  { name: 'cudaErrorUnknown', test: /cudaErrorUnknown/i },
  { name: 'CUFFT_INTERNAL_ERROR', test: /CUFFT_INTERNAL_ERROR/i },
  { name: 'engine core init failure', test: /engine[ _-]?core[^\n]{0,40}(initiali[sz]ation failed|failed to start)/i },
]

/** The known wedge error a failure's text carries (cudaErrorUnknown, …), or null: what "wedged" means. */
export function wedgeSignature(text: string): string | null {
  for (const p of WEDGE_PATTERNS) if (p.test.test(text)) return p.name
  return null
}

/**
 * Why a failure restarts the container (a known wedge error, else an HTTP 500), or null. A bare
 * HTTP 500 is restarted too, but it is a failure, not a wedge: it is not labelled wedged.
 */
export function wedgePattern(status: number | null, text: string): string | null {
  return wedgeSignature(text) ?? (status === 500 ? 'HTTP 500' : null)
}

/** What one probe saw. `status` is the HTTP status of a failed call (null: no answer). */
export interface ProbeOutcome {
  ok: boolean
  error: string | null
  note: string | null
  status: number | null
}

export const failed = (error: string, status: number | null = null): ProbeOutcome => ({
  ok: false,
  error,
  note: null,
  status,
})

/** A call that got no HTTP answer: refused or reset (`unreachable`), or over its deadline. */
export class NoAnswer extends Error {
  constructor(
    message: string,
    readonly unreachable: boolean,
  ) {
    super(message)
  }
}

/** One synthetic request against a service at `base`, given up when `signal` aborts. */
export type Probe = (base: string, signal: AbortSignal) => Promise<ProbeOutcome>

/** The probe each kind of service gets (a placement's engine is probed as an llm). */
export type ProbeSet = Readonly<Record<ProbedService, Probe>>
