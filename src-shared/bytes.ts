/**
 * A size in bytes as a person reads it, in decimal units (1 GB = 10⁹ bytes): the unit the nodes'
 * memory is sold in (a DGX Spark's 128 GB), the model hubs list weights in and `df -H` prints.
 * Pure: the daemon's fit and placement notes and the dashboard's cards, charts and summaries all
 * use it, so a figure reads the same wherever it is shown.
 */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—'
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB']
  let v = Math.abs(n)
  let i = 0
  while (v >= 999.95 && i < units.length - 1) {
    v /= 1000
    i++
  }
  const text = i === 0 ? v.toFixed(0) : v.toFixed(1)
  return `${n < 0 ? '-' : ''}${text} ${units[i]}`
}
