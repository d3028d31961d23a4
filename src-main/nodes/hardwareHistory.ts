import { z } from 'zod'
import type { Clock } from '../lib/clock'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'
import { HardwareSample } from '../contract/nodes'
import type { NodeName } from '../contract/schemas'

/** How far back the charts' readings go. */
export const HISTORY_MS = 15 * 60 * 1000
/** Most samples kept per node, however often the nodes are probed: bounds memory and the file. */
export const MAX_SAMPLES = 2000
/** Least time between two writes of the history file; stop() writes the rest. */
export const SAVE_EVERY_MS = 30_000

const Samples = z.array(HardwareSample).max(MAX_SAMPLES * 2)
/** node1 and node2 always; node3… for the nodes NODES listed when it was written. */
const HistoryFile = z.object({ version: z.literal(1), node1: Samples, node2: Samples }).catchall(Samples)

/**
 * The hardware readings behind the Cluster view's charts, kept for HISTORY_MS and saved to a
 * bounded file under DATA_DIR (atomic writes, at most every SAVE_EVERY_MS) so a restart does not
 * blank them. A malformed file is reported, kept aside, and skipped. Only the configured nodes'
 * readings are kept: a node taken out of NODES drops out of the file at the next write.
 */
export class HardwareHistory {
  private readonly samples = new Map<NodeName, HardwareSample[]>()
  private lastSave = Number.NEGATIVE_INFINITY
  private dirty = false

  constructor(
    private readonly file: string | null,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The configured nodes, node1 and node2 first. */
    nodes: readonly NodeName[] = ['node1', 'node2'],
  ) {
    for (const node of nodes) this.samples.set(node, [])
    if (file) this.load(file)
  }

  private load(file: string): void {
    const read = readStateFile(file, (text) => HistoryFile.parse(JSON.parse(text)), this.clock.now())
    if (read.kind === 'corrupt') {
      this.logger.warn(
        replacedStateFileMessage(
          'hardware history',
          file,
          read,
          'the charts start empty (a new file is written with the next reading)',
        ),
      )
      return
    }
    if (read.kind !== 'ok') return
    for (const node of this.samples.keys()) {
      const list = read.value[node]
      if (!Array.isArray(list)) continue
      this.samples.set(
        node,
        [...list].sort((a, b) => a.at - b.at),
      )
      this.trim(node)
    }
  }

  remember(node: NodeName, sample: HardwareSample): void {
    const list = this.samples.get(node)
    if (list === undefined) return
    list.push(sample)
    this.trim(node)
    this.dirty = true
    if (this.clock.now() - this.lastSave >= SAVE_EVERY_MS) this.save()
  }

  /** Readings of the last HISTORY_MS per node, oldest first. */
  view(): { node1: HardwareSample[]; node2: HardwareSample[]; [node: NodeName]: HardwareSample[] } {
    const since = this.clock.now() - HISTORY_MS
    const recent = (node: NodeName): HardwareSample[] => (this.samples.get(node) ?? []).filter((x) => x.at >= since)
    const out = Object.fromEntries([...this.samples.keys()].map((node) => [node, recent(node)]))
    return { ...out, node1: recent('node1'), node2: recent('node2') }
  }

  /** Writes what is not saved yet (at shutdown). */
  flush(): void {
    if (this.dirty) this.save()
  }

  private trim(node: NodeName): void {
    const list = this.samples.get(node)
    if (list === undefined) return
    const since = this.clock.now() - HISTORY_MS
    let drop = 0
    while (drop < list.length && list[drop]!.at < since) drop++
    if (list.length - drop > MAX_SAMPLES) drop = list.length - MAX_SAMPLES
    if (drop > 0) list.splice(0, drop)
  }

  private save(): void {
    this.lastSave = this.clock.now()
    this.dirty = false
    if (!this.file) return
    try {
      atomicWriteFile(this.file, JSON.stringify({ version: 1, ...this.view() }), { role: 'hardware history' })
    } catch (err) {
      this.logger.warn('could not save the hardware history', { error: (err as Error).message })
    }
  }
}
