import { formatBytes } from '../../format/bytes'

/** Formatting for the cluster view. Sizes in decimal GB, the one unit of the console (format/bytes.ts). */
export const bytes = formatBytes

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—'
  const d = Math.floor(seconds / 86400)
  const h = Math.floor((seconds % 86400) / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  if (d > 0) return `${d}d ${h}h`
  if (h > 0) return `${h}h ${m}m`
  if (m > 0) return `${m}m`
  return `${Math.round(seconds)}s`
}

export function pct(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined ? '—' : `${Math.round(fraction * 100)}%`
}

/** The console's one date format (format/when.ts), under the names the cluster view uses. */
export { formatTime as time, formatDateTime as dateTime } from '../../format/when'
