/**
 * The limits on automatic restarts (spec 1, 3.3 and 8), one limiter for every kind of subject:
 * deep health's services and placements, and the placement reconciler's relaunches.
 */
export const RESTART_LIMITS = {
  /** No automatic restart within this long of the subject (or the daemon) starting. */
  graceMs: 60_000,
  /** Since the last automatic restart of that subject. */
  cooldownMs: 120_000,
  /** At most this many automatic restarts of one subject… */
  cap: 3,
  /** …within this window. */
  windowMs: 30 * 60_000,
} as const

/** A subject's automatic restarts: their times (newest last) and the last one. */
export interface RestartCounters {
  recent: number[]
  last: number | null
}

export type RestartHoldKind = 'grace' | 'cooldown' | 'cap'

export interface RestartHoldNow {
  readonly hold: RestartHoldKind
  readonly detail: string
  /** When the hold ends (null: the cap, which ends only as old restarts leave the window). */
  readonly until: number | null
}

/**
 * What holds a restart back now, checked in the order grace, cooldown, cap; null when none does.
 * `startedAt` is when the subject (or the daemon) last came up, `what` says which. Prunes
 * `c.recent` to the window.
 */
export function restartHold(
  c: RestartCounters,
  now: number,
  startedAt: number | null,
  what = 'started',
): RestartHoldNow | null {
  const known = Math.max(startedAt ?? -Infinity, c.last ?? -Infinity)
  if (now - known < RESTART_LIMITS.graceMs)
    return {
      hold: 'grace',
      detail: graceDetail(now - known, c.last === known ? 'restarted' : what),
      until: known + RESTART_LIMITS.graceMs,
    }
  c.recent = c.recent.filter((t) => now - t < RESTART_LIMITS.windowMs)
  if (c.last !== null && now - c.last < RESTART_LIMITS.cooldownMs)
    return {
      hold: 'cooldown',
      detail: `last auto-restart ${secs(now - c.last)} ago; the cooldown is ${secs(RESTART_LIMITS.cooldownMs)}`,
      until: c.last + RESTART_LIMITS.cooldownMs,
    }
  if (c.recent.length >= RESTART_LIMITS.cap)
    return {
      hold: 'cap',
      detail: `${c.recent.length} auto-restarts in the last 30 min; at most ${RESTART_LIMITS.cap} are allowed`,
      until: null,
    }
  return null
}

export function graceDetail(elapsedMs: number, what: string): string {
  return `${what} ${secs(elapsedMs)} ago; no auto-restart within the first ${secs(RESTART_LIMITS.graceMs)}`
}

function secs(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))} s`
}
