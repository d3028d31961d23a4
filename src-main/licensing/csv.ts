/**
 * CSV exports of admin lists (RFC 4180): a header row, CRLF line ends, and every field that holds
 * a comma, a quote, CR or LF quoted with its quotes doubled. A text cell a spreadsheet would read
 * as a formula (starting with = + - @, tab or CR) gets a leading apostrophe, since buyer emails
 * and notes are written by strangers.
 */

export interface CsvColumn<T> {
  readonly header: string
  readonly value: (row: T) => string | number | boolean | null
}

const FORMULA_START = /^[=+\-@\t\r]/

function cell(v: string | number | boolean | null): string {
  if (v === null) return ''
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  const text = FORMULA_START.test(v) ? `'${v}` : v
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

export function toCsv<T>(columns: readonly CsvColumn<T>[], rows: Iterable<T>): { csv: string; rows: number } {
  const lines = [columns.map((c) => cell(c.header)).join(',')]
  let count = 0
  for (const row of rows) {
    lines.push(columns.map((c) => cell(c.value(row))).join(','))
    count++
  }
  return { csv: lines.join('\r\n') + '\r\n', rows: count }
}

/** An epoch-milliseconds time as an ISO 8601 UTC string, blank when absent. */
export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** `licenses-2026-11-23.csv`, dated by the injected clock. */
export const exportName = (what: string, nowMs: number): string =>
  `${what}-${new Date(nowMs).toISOString().slice(0, 10)}.csv`
