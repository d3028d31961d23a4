/**
 * A size in bytes as a person reads it, in decimal units (1 GB = 10⁹ bytes): the unit the nodes'
 * memory is sold in (a DGX Spark's 128 GB), the model hubs list weights in and `df -H` prints.
 * The console's cards, charts (axes and hover legends), fit summaries and tooltips all write sizes
 * through it, so a figure reads the same wherever it is shown (the daemon's notes are in GB too).
 */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—'
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB']
  let v = n
  let i = 0
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000
    i++
  }
  // Three significant figures or so: 9.7 GB, 90.2 GB, 116 GB.
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`
}
