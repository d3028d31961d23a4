import type { SwapView } from '../contract/models'
import type { Placement, PlacementsView } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import { ENGINE_PROCESS_PREFIX, type HardwareSnapshot } from '../contract/nodes'
import { DEFAULT_GPU_MEMORY_UTILIZATION } from './fit'
import { modeOfNodes, nodeHardware, touchesNode1, type PlacementBook, type PlacementStep } from './placementBook'

/** How long a publication waits for its view's hardware read (an SSH probe is bounded at 6 s) before going out without it. */
export const VIEW_WAIT_MS = 10_000

/** What runs where as the spec's swap view, the placements view and the event that carries it. */
export class PlacementViews {
  /** The last publication asked for: the next one is read after it. */
  private publishing: Promise<void> = Promise.resolve()

  constructor(private readonly book: PlacementBook) {}

  /** The spec's swap view: node1's model and the job that touches node1. */
  async swapView(): Promise<SwapView> {
    const { book } = this
    await book.learned
    const s = book.changing !== null && touchesNode1(book.changing) ? book.changing : null
    const job = s ? book.deps.jobs.get(s.jobId) : (book.deps.jobs.list('swap')[0] ?? null)
    return {
      loaded: book.loaded(),
      job,
      swapping:
        s && s.entry !== null && s.action === 'place'
          ? {
              key: s.entry.def.key,
              mode: modeOfNodes(s.nodes),
              phase: s.phase,
              eta_s: book.etaS(s),
              layout: s.plan?.layout ?? null,
            }
          : null,
    }
  }

  async placementsView(): Promise<PlacementsView> {
    await this.book.learned
    return this.viewWith(await this.book.deps.hardware().catch(() => null))
  }

  /**
   * Publishes the placements view (`placements.changed`) with the job's step that changed it, if one
   * did. In order: each view is read once the one before went out, so the steps arrive as the job
   * made them and no view is older than the one before it.
   */
  publish(step: PlacementStep | null = null): void {
    this.publishing = this.publishing.then(() => this.publishNow(step))
  }

  private async publishNow(step: PlacementStep | null): Promise<void> {
    try {
      this.book.deps.events.publish('placements.changed', { ...(await this.boundedView()), step })
    } catch (err) {
      this.book.deps.logger.warn('could not publish the placements', { error: err })
    }
  }

  /**
   * The view, or the view without the hardware when reading it takes past viewWaitMs: one stuck
   * read holds the publications behind it that long at most, and its step still goes out.
   */
  private async boundedView(): Promise<PlacementsView> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<null>((done) => {
      timer = setTimeout(() => done(null), this.book.deps.viewWaitMs ?? VIEW_WAIT_MS)
      timer.unref()
    })
    try {
      return (await Promise.race([this.placementsView(), late])) ?? this.viewWith(null)
    } finally {
      clearTimeout(timer)
    }
  }

  private viewWith(snapshot: HardwareSnapshot | null): PlacementsView {
    const { book } = this
    const s = book.changing
    return {
      placements: book.all().map((p) => {
        const keep = book.intents.get(p.id)?.keep
        return {
          ...p,
          memory_bytes_per_node: this.reservation(p, snapshot),
          recovery: book.recoveryOf(p.id),
          keep:
            keep === undefined ? null : { pinned: 'pinned' in keep, ttl_min: 'ttl_min' in keep ? keep.ttl_min : null },
        }
      }),
      nodes: book.deps.nodeNames().map((name) => this.nodeRow(name, snapshot)),
      changing:
        s === null
          ? null
          : {
              id: s.id,
              key: s.entry?.def.key ?? null,
              action: s.action,
              phase: s.phase,
              displaces: s.displaces.map((d) => d.placement.id),
              eta_s: book.etaS(s),
              job_id: s.jobId,
            },
      job: s ? book.deps.jobs.get(s.jobId) : (book.deps.jobs.list('swap')[0] ?? null),
    }
  }

  /**
   * Memory held on a node by processes that are not an engine — the speech services and anything
   * else a placement there would not stop. On unified memory that is the pool's other share (the
   * same figure the node card shows); otherwise the GPU processes not titled `VLLM::…`. An engine's
   * memory (placed, leftover or loading) is left out: the job stops the llm container on its nodes
   * before launching. Null when the node gave no list.
   */
  othersOn(node: NodeName, snapshot: HardwareSnapshot | null): number | null {
    const hw = nodeHardware(snapshot, node)
    if (hw?.status !== 'ok' || hw.gpu === null) return null
    if (hw.memory_pool) return hw.memory_pool.other_bytes
    return hw.gpu.processes
      .filter((p) => !p.name.startsWith(ENGINE_PROCESS_PREFIX))
      .reduce((sum, p) => sum + p.used_bytes, 0)
  }

  private nodeRow(name: NodeName, snapshot: HardwareSnapshot | null): PlacementsView['nodes'][number] {
    const hw = nodeHardware(snapshot, name)
    const on = this.book.all().find((p) => p.nodes.includes(name))
    return {
      name,
      placement_id: on?.id ?? null,
      reachable: hw === undefined || hw.status === 'not_configured' ? null : hw.status === 'ok',
      launcher: this.book.deps.launcherKnown?.(name) ?? null,
      ram_total_bytes: hw?.status === 'ok' ? (hw.ram?.total_bytes ?? null) : null,
      other_bytes: this.othersOn(name, snapshot),
    }
  }

  /**
   * What the engine reserves on each node: on unified memory with the engine running, what it holds
   * there (the pool's engine part, so the card's figures agree); else gpu-memory-utilization × the
   * head's RAM.
   */
  private reservation(p: Placement, snapshot: HardwareSnapshot | null): number | null {
    const hw = nodeHardware(snapshot, p.head)
    if (hw?.status !== 'ok' || hw.ram === null) return null
    if (hw.memory_pool && hw.memory_pool.engine_bytes > 0) return hw.memory_pool.engine_bytes
    const entry = p.key === null ? undefined : this.book.deps.catalog.list().find((e) => e.def.key === p.key)
    const util = entry?.effectiveKnobs['gpu-memory-utilization'] ?? DEFAULT_GPU_MEMORY_UTILIZATION
    return Math.floor(hw.ram.total_bytes * util)
  }
}
