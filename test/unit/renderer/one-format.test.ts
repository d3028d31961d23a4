import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatDate, formatDateTime, formatNumber, formatTime } from '../../../src-renderer/format/when'
import { formatBytes } from '../../../src-renderer/format/bytes'
import { validationLines } from '../../../src-renderer/components/licensing/validationSeries'

/** One date format and one unit across the console (issue 46, items 8 and 10). */
const ROOT = join(__dirname, '../../../src-renderer')
const FORMATTER = 'format/when.ts'

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.(vue|ts)$/.test(name) ? [path] : []
  })
}

describe('one format in the renderer', () => {
  it('no renderer file calls toLocale*String or Intl outside the one formatter', () => {
    const offenders = sources(ROOT)
      .filter((path) => relative(ROOT, path) !== FORMATTER)
      .flatMap((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${relative(ROOT, path)}:${i + 1}` }))
          .filter(({ line }) => /\.toLocale\w*String\s*\(|\bIntl\.\w+Format\b/.test(line))
          .map(({ at }) => at),
      )
    expect(offenders).toEqual([])
  })

  it('no renderer file writes sizes in GiB or divides by 1024 itself: sizes go through the one formatter', () => {
    const offenders = sources(ROOT).filter((path) => /GiB|2 \*\* 30|\/ 1024\b/.test(readFileSync(path, 'utf8')))
    expect(offenders.map((p) => relative(ROOT, p))).toEqual([])
  })

  it('writes a moment, a day and a time one way, whatever the locale', () => {
    const at = new Date(2026, 11, 1, 20, 7, 40).getTime()
    expect(formatDateTime(at)).toBe('2026-12-01 20:07:40')
    expect(formatDate(at)).toBe('2026-12-01')
    expect(formatTime(at)).toBe('20:07:40')
    expect(formatTime(new Date(2026, 0, 2, 8, 3, 5).getTime())).toBe('08:03:05')
    expect(formatDateTime(null)).toBe('—')
    expect(formatNumber(12345)).toBe('12,345')
    expect(formatNumber(1234.567, 2)).toBe('1,234.57')
  })

  it('sizes in decimal GB (1 GB = 10^9 bytes), about three figures', () => {
    expect(formatBytes(128849018880)).toBe('129 GB')
    expect(formatBytes(90194313216)).toBe('90.2 GB')
    expect(formatBytes(9663676416)).toBe('9.7 GB')
    expect(formatBytes(1.5e12)).toBe('1.5 TB')
    expect(formatBytes(512)).toBe('512 B')
    expect(formatBytes(null)).toBe('—')
  })
})

describe('validations chart', () => {
  it('draws each result as its own line, told apart by colour and dash even where counts coincide', () => {
    const days = ['2026-12-01', '2026-12-02']
    const rows = ['ok', 'expired', 'revoked'].flatMap((result) =>
      days.map((day) => ({ day, kind: 'validate' as const, result, count: 3 })),
    )
    const lines = validationLines(rows, days)
    expect(lines.map((l) => l.label)).toEqual(['ok', 'expired', 'revoked'])
    expect(lines.every((l) => l.values.join() === '3,3')).toBe(true)
    const looks = new Set(lines.map((l) => `${l.color} ${l.dash.join(',')}`))
    expect(looks.size).toBe(3)
    expect(new Set(lines.map((l) => l.dash.join(','))).size).toBe(3)
  })
})
