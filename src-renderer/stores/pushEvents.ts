import type { EventStreamItem } from '../../src-main/contract/events'
import { useApi } from '../api'

/**
 * Follows the push events (`GET /api/events`, or the IPC channel) for a store. A stream that stops is
 * reported through `report` and is opened again by the next `follow()` (on window focus).
 */
export function pushEventFollower(
  apply: (ev: EventStreamItem) => void,
  report: (problem: string | null) => void,
): { follow(): void; unfollow(): void } {
  let stop: (() => void) | null = null
  return {
    follow() {
      if (stop) return
      stop = useApi().subscribe(
        'streamEvents',
        {},
        {
          onEvent: (ev) => {
            report(null)
            apply(ev)
          },
          onError: (err) => {
            stop = null
            report(`live updates stopped (${err.message}); they resume when the window regains focus`)
          },
          onEnd: () => (stop = null),
        },
      )
    },
    unfollow() {
      stop?.()
      stop = null
    },
  }
}
