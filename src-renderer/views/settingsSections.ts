/**
 * How the Settings page folds its groups (issue 31, phones): a group opens by itself when one of
 * its fields is invalid or unsaved; otherwise it starts open only on a wide screen and only when short.
 */

/** At most this many fields and a group counts as short enough to start open on a wide screen. */
export const SHORT_SECTION = 4

export interface SectionState {
  /** Fields in the group. */
  fields: number
  /** The screen is wide (the sidebar layout, ≥ 900 px). */
  wide: boolean
  /** A field in the group has an error. */
  invalid: boolean
  /** A field in the group has an unsaved edit. */
  unsaved: boolean
}

export function sectionStartsOpen(s: SectionState): boolean {
  if (s.invalid || s.unsaved) return true
  return s.wide && s.fields <= SHORT_SECTION
}

/** A section must be open now: something in it needs the reader's eye. */
export function sectionMustOpen(s: Pick<SectionState, 'invalid' | 'unsaved'>): boolean {
  return s.invalid || s.unsaved
}

const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]+/g) ?? []

/**
 * The help line worth showing under a label, or null when it only restates the label
 * ("node1 SSH user" under "node1 SSH user", "asr HTTP port" under "asr port"): one label per field.
 */
export function helpBeyondLabel(label: string, help: string): string | null {
  const known = new Set(words(label))
  const extra = words(help).filter((w) => !known.has(w))
  return extra.length >= 2 ? help : null
}

/** The Nodes group's line: the machines configured now, counted and named (not a fixed "two"). */
export function nodesBlurb(nodes: readonly string[]): string {
  if (nodes.length === 0) return 'The machines Tandem reaches over SSH: none is configured yet.'
  if (nodes.length === 1) return `The one machine Tandem reaches over SSH: ${nodes[0]}.`
  return `The ${nodes.length} machines Tandem reaches over SSH: ${nodes.join(', ')}.`
}
