import type { FitEstimate, Layout } from '../../../src-main/contract/models'
import { bytes, duration } from '../cluster/format'

/** Formatting shared by the Models view. */
export { bytes, duration }

export type FitOrError = FitEstimate | { error: string }

export function isFit(f: FitOrError | null): f is FitEstimate {
  return f !== null && 'verdict' in f
}

const VERDICT: Record<FitEstimate['verdict'], { label: string; cls: string }> = {
  fits: { label: 'fits', cls: 'badge ok' },
  tight: { label: 'tight', cls: 'badge warn' },
  no_fit: { label: 'does not fit', cls: 'badge bad' },
  unknown: { label: 'fit unknown', cls: 'badge' },
}

export function verdictLabel(v: FitEstimate['verdict']): string {
  return VERDICT[v].label
}
export function verdictClass(v: FitEstimate['verdict']): string {
  return VERDICT[v].cls
}

/** One line per node: what it needs against its budget, and what other processes hold there. */
export function fitLines(f: FitEstimate): string[] {
  return f.nodes.map((n) => fitLine(n))
}

/** One node of a fit estimate in words. */
export function fitLine(n: FitEstimate['nodes'][number]): string {
  const others = n.other_bytes ? `; other processes hold ${bytes(n.other_bytes)}` : ''
  return `${n.node}: needs ${bytes(n.need_bytes)} (weights ${bytes(n.weights_bytes)} + KV cache ${bytes(n.kv_cache_bytes)}) of ${bytes(n.budget_bytes)} budget${others}`
}

export function rate(bytesPerS: number | null | undefined): string {
  return bytesPerS === null || bytesPerS === undefined ? '—' : `${bytes(bytesPerS)}/s`
}

/** Seconds as "about N left", or a dash. */
export function eta(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—'
  return seconds <= 0 ? 'any moment' : `about ${duration(Math.max(1, Math.round(seconds)))} left`
}

/** A layout in the operator's words: where the model runs and how it is split. */
export function layoutText(layout: Layout): string {
  if (layout.mode === 'solo') return 'solo on node1'
  const backend = layout.backend === 'ray' ? ', Ray' : ''
  return `cluster on ${layout.nodes.join(' + ')}, tensor parallel ${layout.tensor_parallel}${backend}`
}
