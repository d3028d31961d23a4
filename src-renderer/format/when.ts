/**
 * The console's one way of writing a moment, a day, a time of day and a count. Local time,
 * written the same in every locale: `2026-12-01 20:07:40`, `2026-12-01`, `20:07:40` (year first
 * and a 24-hour clock read the same way everywhere and sort as text), counts with thin groups
 * (`12,345`). Every view writes dates and numbers through these; a unit test holds the renderer to it.
 */
const two = (n: number): string => String(n).padStart(2, '0')

function valid(ms: number | null | undefined): ms is number {
  return ms !== null && ms !== undefined && Number.isFinite(ms)
}

/** `2026-12-01` (local). */
export function formatDate(ms: number | null | undefined): string {
  if (!valid(ms)) return '—'
  const d = new Date(ms)
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`
}

/** `20:07:40` (local, 24-hour). */
export function formatTime(ms: number | null | undefined): string {
  if (!valid(ms)) return '—'
  const d = new Date(ms)
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

/** `2026-12-01 20:07:40` (local). */
export function formatDateTime(ms: number | null | undefined): string {
  return valid(ms) ? `${formatDate(ms)} ${formatTime(ms)}` : '—'
}

/** A count or decimal with comma groups: `12,345`, `1,234.5` (at most `digits` decimals). */
export function formatNumber(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits })
}
