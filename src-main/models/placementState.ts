import { z } from 'zod'
import { Layout } from '../contract/models'
import type { Placement } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'

/**
 * What survives a daemon restart about placements (DATA_DIR/swap-state.json, the file the single
 * llm swap kept): each placement's model and layout, and how long each model last took to load
 * (the next load's ETA). A file from before placements (`last` only) reads as node1's placement.
 */

const PlacementRecord = z.object({
  id: z.string(),
  key: z.string().nullable(),
  served: z.string(),
  nodes: z.array(z.string().regex(/^node[0-9]{1,2}$/)).min(1),
  layout: Layout.nullable().default(null),
  since: z.number().nullable(),
})
export type PlacementRecord = z.infer<typeof PlacementRecord>

const StateFile = z.object({
  /** Milliseconds each model last took from launch to answering. */
  loads: z.record(z.string(), z.number()).default({}),
  /** The single llm's model, as files written before placements kept it. */
  last: z
    .object({
      key: z.string().nullable(),
      served: z.string(),
      since: z.number().nullable(),
      layout: Layout.nullable().default(null),
    })
    .nullable()
    .default(null),
  placements: z.array(PlacementRecord).optional(),
})
type StateFile = z.infer<typeof StateFile>

/** A placement's id: its nodes joined by `+`, head first. */
export function placementId(nodes: readonly NodeName[]): string {
  return nodes.join('+')
}

/** The persisted placements and load times; every write is atomic, a failed one is logged. */
export class PlacementStateFile {
  private state: StateFile = { loads: {}, last: null }

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {
    const read = readStateFile(file, (t) => StateFile.parse(JSON.parse(t)))
    if (read.kind === 'ok') this.state = read.value
    else if (read.kind === 'corrupt')
      logger.warn(replacedStateFileMessage('swap state file', file, read, 'starting a fresh one'))
  }

  /** The placements as last recorded (node1's from an older file's `last`). */
  records(): PlacementRecord[] {
    if (this.state.placements !== undefined) return this.state.placements.map((r) => ({ ...r }))
    const last = this.state.last
    if (last === null) return []
    const nodes = last.layout?.nodes ?? ['node1']
    return [
      { id: placementId(nodes), key: last.key, served: last.served, nodes, layout: last.layout, since: last.since },
    ]
  }

  loadMs(key: string): number | null {
    return this.state.loads[key] ?? null
  }

  rememberLoad(key: string, ms: number): void {
    this.state.loads[key] = ms
  }

  /** Writes the placements now running (records only: states are learned again at start). */
  save(placements: readonly Placement[]): void {
    const records = placements.map((p): PlacementRecord => ({
      id: p.id,
      key: p.key,
      served: p.served,
      nodes: p.nodes,
      layout: p.layout,
      since: p.since,
    }))
    const node1 = placements.find((p) => p.nodes.includes('node1')) ?? null
    this.state.placements = records
    this.state.last =
      node1 === null ? null : { key: node1.key, served: node1.served, since: node1.since, layout: node1.layout }
    try {
      atomicWriteFile(this.file, JSON.stringify(this.state, null, 2) + '\n', { role: 'model placements' })
    } catch (err) {
      this.logger.warn('could not save the placements', { error: err })
    }
  }
}
