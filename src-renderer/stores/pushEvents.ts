import type { EventStreamItem } from '../../src-main/contract/events'
import { useApi } from '../api'

interface Listener {
  apply(ev: EventStreamItem): void
  report(problem: string | null): void
}

/** The stores following push events now: they share one stream, open while any follows. */
const listeners = new Set<Listener>()
let stopStream: (() => void) | null = null

function openStream(): void {
  if (stopStream) return
  stopStream = useApi().subscribe(
    'streamEvents',
    {},
    {
      onEvent: (ev) => {
        for (const l of [...listeners]) {
          l.report(null)
          l.apply(ev)
        }
      },
      onError: (err) => {
        stopStream = null
        for (const l of [...listeners])
          l.report(`live updates stopped (${err.message}); they resume when the window regains focus`)
      },
      onEnd: () => (stopStream = null),
    },
  )
}

/**
 * Follows the push events (`GET /api/events`, or the IPC channel) for a store. The stores of a view
 * share one stream; one that stops is reported through `report` and is opened again by the next
 * `follow()` (on window focus).
 */
export function pushEventFollower(
  apply: (ev: EventStreamItem) => void,
  report: (problem: string | null) => void,
): { follow(): void; unfollow(): void } {
  const listener: Listener = { apply, report }
  return {
    follow() {
      listeners.add(listener)
      openStream()
    },
    unfollow() {
      listeners.delete(listener)
      if (listeners.size > 0) return
      stopStream?.()
      stopStream = null
    },
  }
}
