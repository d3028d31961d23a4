import type { ServiceRecord } from '../contract/services'
import type { Clock } from '../lib/clock'

const MAX_CHANGES = 20

type Change = ServiceRecord['recent_changes'][number]

/**
 * Each service's recent changes, as the services list shows them: label changes the list saw and
 * the actions taken on its container (at most MAX_CHANGES each).
 */
export class ServiceHistory {
  private readonly changes = new Map<string, Change[]>()
  private readonly lastLabel = new Map<string, string>()

  constructor(private readonly clock: Clock) {}

  /** Records the label the list now shows when it differs from the last one; the service's changes. */
  label(name: string, label: string): Change[] {
    const prev = this.lastLabel.get(name)
    if (prev !== label) {
      this.lastLabel.set(name, label)
      this.push(name, { at: this.clock.now(), from: prev ?? null, to: label })
    }
    return [...(this.changes.get(name) ?? [])]
  }

  /** An action on the service (start, stop, restart and why), after its last label. */
  note(name: string, what: string): void {
    this.push(name, { at: this.clock.now(), from: this.lastLabel.get(name) ?? null, to: what })
  }

  forget(name: string): void {
    this.changes.delete(name)
    this.lastLabel.delete(name)
  }

  private push(name: string, change: Change): void {
    const list = this.changes.get(name) ?? []
    list.push(change)
    if (list.length > MAX_CHANGES) list.splice(0, list.length - MAX_CHANGES)
    this.changes.set(name, list)
  }
}
