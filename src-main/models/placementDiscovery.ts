import type { Placement } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { HardwareSnapshot } from '../contract/nodes'
import { servedNow } from './engineLoad'
import { nodeHardware, type PlacementBook } from './placementBook'
import { placementId, type PlacementRecord } from './placementState'
import type { PlacementIntent } from './placementIntent'
import { servedName } from './launch'

/** The look at each node's engine while the daemon starts. */
const START_PROBE_MS = 2_000

/**
 * What runs, learned and followed: at start each recorded placement whose head still serves it and
 * any other engine found answering; afterwards each look at the engines (EngineWatch) and each
 * change of a node's reachability.
 */
export class PlacementDiscovery {
  /** An unknown model seen answering on a head at the last look: taken in when the next look agrees. */
  private readonly sighted = new Map<NodeName, string>()

  constructor(
    private readonly book: PlacementBook,
    /** Says that what runs where changed. */
    private readonly changed: () => void,
  ) {}

  /**
   * A node's reachability changed: its placements show lost, or serve again. What is shown only:
   * requests go wherever an engine answers, whatever SSH says.
   */
  followHardware(snapshot: HardwareSnapshot): void {
    const { book } = this
    let changed = false
    book.unreachable = new Set(book.configured().filter((n) => nodeHardware(snapshot, n)?.status === 'unreachable'))
    for (const p of book.all()) {
      const down = p.nodes.find((n) => nodeHardware(snapshot, n)?.status === 'unreachable')
      if (down !== undefined && (p.state !== 'lost' || p.reason !== `${down} is unreachable`)) {
        book.placedById.set(p.id, { ...p, state: 'lost', reason: `${down} is unreachable` })
        changed = true
      } else if (down === undefined && p.state === 'lost') void this.recheck(p)
    }
    if (changed) this.changed()
  }

  /** At start: each recorded placement whose head still serves it, and any other node's engine found answering. */
  async learn(): Promise<void> {
    const { book } = this
    const recorded = book.state.records().filter((r) => r.nodes.every((n) => book.deps.targetOf(n) !== null))
    // What the operator asked for counts as recorded too: a job a restart interrupted left only its intent.
    const records = [
      ...recorded,
      ...book.intents
        .list()
        .filter((i) => !recorded.some((r) => r.id === i.id || r.nodes.some((n) => i.nodes.includes(n))))
        .map((i) => this.recordOf(i)),
    ]
    const seen = new Set<string>()
    const heads = new Map<string, NodeName>()
    for (const r of records) heads.set(r.id, r.nodes[0] as NodeName)
    for (const node of book.configured()) if (!records.some((r) => r.nodes.includes(node))) heads.set(node, node)
    const looks = await Promise.all(
      [...heads].map(async ([id, head]) => {
        const url = book.deps.engineUrl(head)
        // Two names for one origin (a test rig, a misconfiguration) must not make two placements.
        if (url === null || seen.has(url)) return { id, head, names: null }
        seen.add(url)
        const names = await servedNow(url, START_PROBE_MS)
        book.watch.record(url, names)
        return { id, head, names }
      }),
    )
    for (const look of looks) {
      const record = records.find((x) => x.id === look.id)
      // The recorded model when the engine still lists it among its names, else the first it lists.
      const served = record !== undefined && look.names?.includes(record.served) ? record.served : look.names?.[0]
      // A recorded placement whose engine is silent is kept, lost, until it answers or is stopped.
      const p =
        served !== undefined ? this.found(served, look.head, record) : record === undefined ? null : silent(record)
      if (p !== null) book.placedById.set(p.id, p)
    }
    if (book.placedById.size === 0) book.deps.logger.info('no model answers on any node')
  }

  /** Each node that may head a placement (not a worker of one), with its engine's origin. */
  heads(): Map<NodeName, string> {
    const { book } = this
    const workers = new Set(book.all().flatMap((p) => p.nodes.slice(1)))
    const out = new Map<NodeName, string>()
    for (const node of book.configured()) {
      const url = book.deps.engineUrl(node)
      if (url !== null && !workers.has(node)) out.set(node, url)
    }
    return out
  }

  /**
   * One look at a head's engine (EngineWatch): a lost placement whose engine serves its model again
   * is ready; a model Tandem did not know of answering on a head (an engine that came up after
   * Tandem started, or was replaced behind its back) is taken in as found running once two looks in a
   * row say so. Silence changes
   * no state (routing reads the look itself), and the nodes a job is changing are left to the job.
   */
  observe(head: NodeName, names: readonly string[] | null): void {
    const { book } = this
    const s = book.changing
    const first = names?.[0]
    const sighted = this.sighted.get(head)
    this.sighted.delete(head)
    if (names === null || first === undefined || this.workerOf(head)) return
    if (s !== null && [...s.nodes, ...s.displaces.flatMap((d) => d.placement.nodes)].includes(head)) return
    const p = book.all().find((x) => x.head === head)
    if (p !== undefined && names.includes(p.served)) {
      if (p.state !== 'lost' || p.nodes.some((n) => book.unreachable.has(n))) return
      book.placedById.set(p.id, { ...p, state: p.layout === null ? 'unknown' : 'ready', reason: null })
    } else {
      // Two looks in a row, so an engine on its way down (a stop that just returned) is not taken in.
      if (sighted !== first) return void this.sighted.set(head, first)
      if (p !== undefined) book.placedById.delete(p.id)
      const found = this.found(first, head, this.intendedOn(head, first))
      book.placedById.set(found.id, found)
      book.deps.logger.info('an engine answers', { node: head, model: found.served })
    }
    this.changed()
  }

  /** A catalog change can name a model found running (a custom entry added for it). */
  catalogChanged(): void {
    const { book } = this
    for (const p of book.placedById.values())
      if (p.key === null) book.placedById.set(p.id, { ...p, key: book.entryServing(p.served)?.def.key ?? null })
  }

  /** A lost placement whose nodes answer SSH again serves again once its engine names its model. */
  private async recheck(p: Placement): Promise<void> {
    const { book } = this
    const names = await servedNow(book.deps.engineUrl(p.head), START_PROBE_MS)
    const now = book.placedById.get(p.id)
    if (now === undefined || now.state !== 'lost') return
    const back = names?.includes(p.served) === true
    const reason = back ? null : `the engine on ${p.head} does not answer`
    if (back) book.placedById.set(p.id, { ...now, state: now.layout === null ? 'unknown' : 'ready', reason })
    else if (now.reason === reason) return
    else book.placedById.set(p.id, { ...now, reason })
    this.changed()
  }

  /** An intent as the start's record of it: its model's served name, nodes and layout. */
  private recordOf(i: PlacementIntent): PlacementRecord {
    const entry = this.book.deps.catalog.list().find((e) => e.def.key === i.key)
    const served = entry === undefined ? i.key : servedName(entry)
    return { id: i.id, key: i.key, served, nodes: [...i.nodes], layout: i.layout, since: null }
  }

  /** The intent headed on `head` whose model is `served` (an engine a restart left loading is adopted as placed). */
  private intendedOn(head: NodeName, served: string): PlacementRecord | undefined {
    const i = this.book.intents.list().find((x) => x.nodes[0] === head)
    if (i === undefined) return undefined
    const r = this.recordOf(i)
    return r.served === served ? { ...r, since: this.book.deps.clock.now() } : undefined
  }

  private workerOf(node: NodeName): boolean {
    return this.book.all().some((p) => p.nodes.indexOf(node) > 0)
  }

  /** A model found answering on a head: the recorded placement when it serves the same, else solo on the head. */
  private found(served: string, head: NodeName, r: PlacementRecord | undefined): Placement {
    const same = r !== undefined && r.served === served
    const nodes = same ? r.nodes : [head]
    return {
      id: placementId(nodes),
      key: this.book.entryServing(served)?.def.key ?? (same ? r.key : null),
      served,
      nodes,
      head,
      layout: same ? r.layout : null,
      // A record without a layout is of a model that was itself found running: still unknown.
      state: same && r.layout !== null ? 'ready' : 'unknown',
      reason: null,
      since: same ? r.since : null,
      memory_bytes_per_node: null,
    }
  }
}

function silent(r: PlacementRecord): Placement {
  const head = r.nodes[0] as NodeName
  return {
    ...r,
    head,
    state: 'lost',
    reason: `the engine on ${head} did not answer when Tandem started`,
    memory_bytes_per_node: null,
  }
}
