import type { DownloadTarget } from '../../../src-main/contract/models'
import type { DiskRow } from '../../stores/catalog'

/** The nodes a placement would run on without its weights known to be there, and what to say. */
export interface WeightsGap {
  /** Each node the weights are missing on or not known on, with why. */
  nodes: { node: string; why: string }[]
  /** Where a download would put them; null when nothing can be downloaded (a local model). */
  target: DownloadTarget | null
  /** The fit could not be estimated (no config.json there, …). */
  fitUnknown: string | null
}

/**
 * What placing on `nodes` lacks (issue 46, item 7): a node whose disk check says the weights are
 * not there, could not look, or never looked (a solo model is checked on node1 only), and a fit
 * that could not be estimated. Null when nothing is missing. A model with a repo can be downloaded
 * to where it is missing: one node by name, node1 and node2 as `both`, more as `all`.
 */
export function weightsGap(
  disk: DiskRow | null,
  nodes: readonly string[],
  fitError: string | null,
  downloadable: boolean,
): WeightsGap | null {
  const missing = nodes.flatMap((node) => {
    const row = disk?.nodes.find((n) => n.node === node)
    if (row === undefined) return disk === null ? [] : [{ node, why: 'not checked there' }]
    if (row.error !== null) return [{ node, why: `could not be checked: ${row.error}` }]
    return row.present ? [] : [{ node, why: 'not on disk' }]
  })
  if (missing.length === 0 && fitError === null) return null
  const where = missing.map((m) => m.node)
  const target: DownloadTarget | null =
    !downloadable || where.length === 0
      ? null
      : where.length === 1
        ? (where[0] as DownloadTarget)
        : where.length === 2 && where.includes('node1') && where.includes('node2')
          ? 'both'
          : 'all'
  return { nodes: missing, target, fitUnknown: fitError }
}
