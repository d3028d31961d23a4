import type { OutputOf } from '../../api'

type Row = OutputOf<'licAdminValidationsDaily'>['rows'][number]

/** One line of the validations chart: its own colour and dash, so lines that coincide still read apart. */
export interface ValidationLine {
  label: string
  color: string
  dash: number[]
  values: number[]
}

/** The refusal reasons shown as their own line; rarer ones are summed as 'other'. */
export const MAX_REASONS = 5
const COLORS = ['#d64545', '#e09b2d', '#8a5cd1', '#2f6fed', '#c2409a', '#7a7a7a']
/** ok solid; each refusal its own dash, so equal counts on the same days do not merge into one line. */
const DASHES: number[][] = [
  [8, 4],
  [2, 3],
  [10, 3, 2, 3],
  [4, 4],
  [1, 5],
  [12, 6],
]

/** Calls per day by result: ok, the commonest refusal reasons, and 'other' for the rest. */
export function validationLines(rows: readonly Row[], days: readonly string[]): ValidationLine[] {
  const byReason = new Map<string, number>()
  for (const r of rows) if (r.result !== 'ok') byReason.set(r.result, (byReason.get(r.result) ?? 0) + r.count)
  const shown = [...byReason.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, MAX_REASONS)
    .map(([reason]) => reason)
  const lineOf = (result: string): string => (result === 'ok' ? 'ok' : shown.includes(result) ? result : 'other')
  const lines = ['ok', ...shown, ...(byReason.size > shown.length ? ['other'] : [])]
  const perDay = new Map<string, Map<string, number>>()
  for (const r of rows) {
    const line = lineOf(r.result)
    const m = perDay.get(line) ?? new Map<string, number>()
    m.set(r.day, (m.get(r.day) ?? 0) + r.count)
    perDay.set(line, m)
  }
  return lines.map((line, i) => ({
    label: line,
    color: line === 'ok' ? '#2e9d5b' : (COLORS[(i - 1) % COLORS.length] as string),
    dash: line === 'ok' ? [] : (DASHES[(i - 1) % DASHES.length] as number[]),
    values: days.map((d) => perDay.get(line)?.get(d) ?? 0),
  }))
}
