import type { SwapPhase } from '../../../src-main/contract/models'
import { SWAP_STEPS } from '../../stores/swapTiming'

type Step = (typeof SWAP_STEPS)[number]

/**
 * What a placement job's progress box says. A job that stops placements to run its own is a swap
 * ("Swapped to … on node2"); one on free nodes is a placement ("Placed … on node2") and has no
 * stopping step. `replaces` is null while that is not known yet: the stop is listed as it may come.
 */
export interface JobWordsInput {
  name: string
  /** The placement the job places: node1, node2, node1+node2… */
  placementId: string | null
  replaces: readonly string[] | null
  state: 'running' | 'succeeded' | 'failed'
}

export function progressTitle(i: JobWordsInput): string {
  const swap = i.replaces === null || i.replaces.length > 0
  const where = i.placementId === null ? '' : ` on ${i.placementId}`
  if (swap) {
    const verb = i.state === 'running' ? 'Swapping to' : i.state === 'failed' ? 'Swap failed:' : 'Swapped to'
    // node1's swap is the spec's: its place goes without saying.
    return `${verb} ${i.name}${i.placementId === 'node1' ? '' : where}`
  }
  if (i.state === 'failed') return `Placing ${i.name}${where} failed`
  return `${i.state === 'running' ? 'Placing' : 'Placed'} ${i.name}${where}`
}

/** The steps the job goes through: the stop only when it replaces a placement. */
export function progressSteps(replaces: readonly string[] | null): Step[] {
  return SWAP_STEPS.filter((s) => s !== 'stopping' || replaces === null || replaces.length > 0)
}

/** What a placement job in progress tells a disabled action: which model, where, at which step. */
export interface JobInProgress {
  /** The swap on node1 as GET /api/swap tells it. */
  swapping: { key: string; phase: SwapPhase } | null
  /** The placement job in progress as the placements view tells it. */
  changing: {
    id: string
    key: string | null
    action: 'place' | 'stop'
    phase: SwapPhase
    displaces: readonly string[]
  } | null
  /** A job followed here still runs though neither view names it yet. */
  running: boolean
}

/** Why a place or swap action waits, naming the job in progress; null when none runs. */
export function jobInProgressText(
  j: JobInProgress,
  nameOf: (key: string | null) => string,
  titles: Readonly<Record<SwapPhase, string>>,
): string | null {
  const c = j.changing
  const phaseText = (p: SwapPhase): string => titles[p].toLowerCase()
  if (c !== null) {
    if (c.action === 'stop') return `a placement is being stopped (${c.id}, ${phaseText(c.phase)})`
    const what = `${nameOf(c.key)} on ${c.id} (${phaseText(c.phase)})`
    return c.displaces.length === 0 ? `a placement job is running: placing ${what}` : `a swap is in progress: ${what}`
  }
  const s = j.swapping
  if (s !== null) return `a swap is in progress: ${nameOf(s.key)} on node1 (${phaseText(s.phase)})`
  return j.running ? 'a swap is in progress' : null
}

/** Scrolls the job's progress box into view and moves the focus to its heading. */
export function revealJobProgress(): void {
  const heading = document.querySelector<HTMLElement>('#job-progress h2')
  if (!heading) return
  heading.scrollIntoView({ block: 'start' })
  heading.focus({ preventScroll: true })
}
