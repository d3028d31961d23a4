import type { Sample } from '../../stores/cluster'
import { bytes } from './format'

export interface Plot {
  title: string
  y: string
  series: { label: string; values: number[]; color: string }[]
  yFormat?: (v: number) => string
}

/**
 * The memory chart of one node, in the console's one unit (GB). On unified memory the pool is
 * one: what is in use and the engines' share of it; otherwise RAM and GPU memory apart.
 */
export function memoryPlot(h: readonly Sample[]): Plot {
  const of = (v: number | null): number => v ?? 0
  const unified = h.some((s) => s.engineMem !== null)
  const hasGpu = h.some((s) => s.util !== null)
  const series = unified
    ? [
        { label: 'in use', values: h.map((s) => of(s.ramUsed)), color: '#16a34a' },
        { label: 'engine', values: h.map((s) => of(s.engineMem)), color: '#0891b2' },
      ]
    : [
        { label: 'RAM', values: h.map((s) => of(s.ramUsed)), color: '#16a34a' },
        ...(hasGpu ? [{ label: 'GPU memory', values: h.map((s) => of(s.gpuMemUsed)), color: '#0891b2' }] : []),
      ]
  return { title: unified ? 'memory in use (unified)' : 'memory in use', y: 'GB', series, yFormat: bytes }
}
