import { badInput, conflict, notFound } from '../contract/errors'
import type { FitEstimate, PlacementKeep, RunMode } from '../contract/models'
import type { Placement } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { HardwareSnapshot } from '../contract/nodes'
import { launchPlan, LaunchRefused, nodesForMode, type LaunchPlan, type PlacementNodes } from './launch'
import {
  layoutLabel,
  modeOfNodes,
  nodeHardware,
  type InFlight,
  type Outcome,
  type PlacementBook,
  type PlacementOrigin,
} from './placementBook'
import type { PlacementIntent } from './placementIntent'
import type { PlacementJob } from './placementJob'
import { placementId } from './placementState'
import type { CatalogEntry } from './types'

export interface PlaceOptions {
  /** Stop the placements on the chosen nodes (the spec's swap always does). */
  readonly displace?: boolean
  readonly confirmNoFit?: boolean
  /** Started by the spec's single-llm swap (its words in messages). */
  readonly spec?: boolean
  /** Who asks (the operator by default): the intent's default keep follows it. */
  readonly origin?: PlacementOrigin
  /** Pinned or an idle ttl (null or absent: the origin's default). */
  readonly keep?: PlacementKeep | null
}

type JobPlan = Pick<
  InFlight,
  'action' | 'entry' | 'nodes' | 'on' | 'plan' | 'launcher' | 'displaces' | 'spec' | 'origin' | 'keep'
>

/**
 * Whether a placement or a stop may start, and its start: refused with the reason before anything
 * stops (a node not configured, unreachable or taken; a launch the head's launcher cannot make; a
 * tensor-parallel size the heads do not divide; no fit), else a job (PlacementJob runs it).
 */
export class PlacementPlanner {
  constructor(
    private readonly book: PlacementBook,
    private readonly job: PlacementJob,
    /** Says that what runs where changed. */
    private readonly changed: () => void,
  ) {}

  /** The spec's swap: replaces the placement on node1 (solo) or the cluster placement. */
  async begin(
    key: string,
    requested?: RunMode,
    confirmNoFit = false,
    origin: PlacementOrigin = 'operator',
  ): Promise<{ job_id: string }> {
    const { book } = this
    await book.learned
    const entry = book.deps.catalog.get(key)
    const mode = modeFor(entry, requested)
    if (mode === 'cluster' && book.deps.targetOf('node2') === null)
      throw conflict(`${entry.def.name} in cluster mode needs node2: set NODE2_HOST and NODE2_USER`)
    let nodes: NodeName[]
    try {
      nodes = nodesForMode(entry.launchArgs, mode, book.configured())
    } catch (err) {
      if (err instanceof LaunchRefused) throw conflict(`${entry.def.name} cannot be launched ${mode}: ${err.message}`)
      throw err
    }
    const { job_id } = await this.place(key, nodes, { displace: true, confirmNoFit, spec: true, origin })
    return { job_id }
  }

  /** Places a catalog model on `nodes` (head first): a job. */
  async place(
    key: string,
    nodes: readonly NodeName[],
    opts: PlaceOptions = {},
  ): Promise<{ job_id: string; id: string }> {
    const { book } = this
    await book.learned
    const entry = book.deps.catalog.get(key)
    this.refuseWhileBusy()
    const snapshot = await book.deps.hardware().catch(() => null)
    this.refuseNodes(nodes, snapshot)
    const taken = book.all().filter((p) => p.nodes.some((n) => nodes.includes(n)))
    if (taken.length > 0 && opts.displace !== true)
      throw conflict(
        `${taken.map((p) => takenText(p, nodes)).join('; ')}; send displace: true to stop ${taken.length > 1 ? 'them' : 'it'} and place ${entry.def.name}`,
      )
    const on = this.nodesFor(nodes, snapshot)
    const head = nodes[0] as NodeName
    const launcher = await book.deps.launcherOn(head)
    let plan: LaunchPlan
    try {
      plan = launchPlan(book.deps.config, entry, on, launcher)
    } catch (err) {
      const how = nodes.length > 1 ? `across ${nodes.join('+')}` : `on ${head}`
      if (err instanceof LaunchRefused) throw conflict(`${entry.def.name} cannot be launched ${how}: ${err.message}`)
      throw badInput(`${entry.def.name} cannot be launched: ${(err as Error).message}`)
    }
    const heads = await book.deps.headsCheck(key, nodes).catch(() => null)
    if (heads !== null) throw badInput(`${entry.def.name} cannot run tensor parallel ${nodes.length}: ${heads}`)
    if (opts.confirmNoFit !== true) await this.refuseNoFit(entry, nodes)
    const displaces = taken.map((placement) => ({ placement, on: this.nodesFor(placement.nodes, snapshot) }))
    return this.startJob({
      action: 'place',
      entry,
      nodes,
      on,
      plan,
      launcher,
      displaces,
      spec: opts.spec === true,
      origin: opts.origin ?? 'operator',
      keep: opts.keep ?? null,
    })
  }

  /** Stops a placement (a job): its engine stops and its nodes are free. */
  async stopPlacement(id: string): Promise<{ job_id: string }> {
    const { book } = this
    await book.learned
    const placement = book.placedById.get(id)
    if (placement === undefined)
      throw notFound(
        `no placement ${id}; placed: ${
          book
            .all()
            .map((p) => p.id)
            .join(', ') || 'none'
        }`,
      )
    this.refuseWhileBusy()
    const snapshot = await book.deps.hardware().catch(() => null)
    const on = this.stopOn(placement, snapshot)
    const launcher = await book.deps.launcherOn(placement.head)
    const { job_id } = this.startJob({
      action: 'stop',
      entry: null,
      nodes: placement.nodes,
      on,
      plan: null,
      launcher,
      displaces: [{ placement, on }],
      spec: false,
      origin: 'operator',
      keep: null,
    })
    return { job_id }
  }

  private startJob(j: JobPlan): { job_id: string; id: string } {
    const { book } = this
    const id = placementId(j.nodes)
    const name = j.entry?.def.name ?? j.displaces[0]?.placement.served ?? id
    // A swap replaces a model; on free nodes it is a placement, whichever way it was asked for.
    const title =
      j.action === 'stop'
        ? `Stop ${name} on ${id}`
        : j.spec && j.plan !== null && j.displaces.length > 0
          ? `Swap to ${name} (${layoutLabel(j.plan.layout)})`
          : `Place ${name} on ${id}`
    let settle!: (o: Outcome) => void
    const outcome = new Promise<Outcome>((r) => (settle = r))
    const record = book.deps.jobs.start('swap', title, (job) =>
      j.action === 'stop' ? this.job.runStop(job) : this.job.runPlace(job),
    )
    const key = j.entry?.def.key
    book.changing = {
      ...j,
      id,
      jobId: record.id,
      title,
      startedAt: book.deps.clock.now(),
      displacedIntents: [],
      phase: j.action === 'stop' ? 'stopping' : 'validating',
      launchedAt: null,
      expectedMs: key === undefined ? null : book.state.loadMs(key),
      outcome,
      settle,
    }
    // Before the job's body runs (the registry starts it on the next tick): a crash from here on
    // leaves the intent and the job's record.
    book.changing.displacedIntents = this.recordIntent(book.changing)
    book.noteJob(book.changing)
    this.changed()
    return { job_id: record.id, id }
  }

  /**
   * The intent a job leaves: stopping or displacing a placement removes its intent; placing records
   * the new one (a recovery keeps its own, with its counters). Returns the displaced intents.
   */
  private recordIntent(s: InFlight): PlacementIntent[] {
    const { intents, deps } = this.book
    const displaced = s.displaces.flatMap((d) => intents.get(d.placement.id) ?? [])
    const remove = s.displaces.map((d) => d.placement.id)
    if (s.action !== 'place' || s.entry === null || s.plan === null) {
      intents.replace(remove, null)
      return displaced
    }
    const own = intents.get(s.id)
    const keep: PlacementKeep =
      s.keep ??
      own?.keep ??
      s.entry.def.keep ??
      (s.origin === 'on_demand' ? { ttl_min: deps.config.models.idleTtlMin } : { pinned: true })
    const next: PlacementIntent = {
      id: s.id,
      key: s.entry.def.key,
      nodes: [...s.nodes],
      layout: s.plan.layout,
      knobs: { ...s.entry.effectiveKnobs },
      keep,
      origin: s.origin === 'on_demand' ? 'on_demand' : (own?.origin ?? 'operator'),
      since: deps.clock.now(),
      recovery:
        s.origin === 'recovery' && own !== undefined
          ? own.recovery
          : { recent: [], last: null, error: null, failed: false },
    }
    intents.replace(remove, next)
    return displaced
  }

  private refuseWhileBusy(): void {
    const running = (kind: 'download' | 'swap') => this.book.deps.jobs.list(kind).find((j) => j.state === 'running')
    const download = running('download')
    if (download) throw conflict(`a download is running (${download.id}: ${download.title}); swap when it has finished`)
    const swap = running('swap')
    if (swap) throw conflict(`a swap job is already running (${swap.id}: ${swap.title})`)
  }

  /** Every node configured and reachable at the last probe; nothing is stopped otherwise. */
  private refuseNodes(nodes: readonly NodeName[], snapshot: HardwareSnapshot | null): void {
    for (const node of nodes) {
      if (this.book.deps.targetOf(node) === null)
        throw badInput(`${node} is not configured (configured: ${this.book.configured().join(', ')})`)
      const hw = nodeHardware(snapshot, node)
      if (hw?.status === 'unreachable') throw conflict(`${node} is unreachable (${hw.error}); nothing was stopped`)
    }
  }

  /**
   * The nodes with the addresses the launcher's `-n` takes. Exactly node1+node2 on a two-node
   * cluster leaves `-n` out (the launcher finds them, as before placements); otherwise every
   * node's cluster-link address must be known.
   */
  private nodesFor(nodes: readonly NodeName[], snapshot: HardwareSnapshot | null): PlacementNodes {
    if (nodes.length === 1) return { nodes, addresses: null }
    const all = this.book.configured()
    if (all.length === 2 && nodes.length === 2 && nodes[0] === 'node1' && nodes[1] === 'node2')
      return { nodes, addresses: null }
    const addresses = nodes.map((node) => {
      const hw = nodeHardware(snapshot, node)
      const ip = hw?.status === 'ok' ? (hw.cluster_ip ?? null) : null
      const span = `the launcher needs it to span ${nodes.join('+')}`
      if (hw?.status === 'unreachable')
        throw conflict(`${node} is unreachable (${hw.error}); ${span}; nothing was stopped`)
      if (ip === null)
        throw conflict(
          `the cluster-link address of ${node} is not known (no RDMA interface up at the last hardware probe); ${span}`,
        )
      return ip
    })
    return { nodes, addresses }
  }

  /** The nodes a stop names; a placement that lost a node stops on its head alone (the lost one cannot be named). */
  private stopOn(p: Placement, snapshot: HardwareSnapshot | null): PlacementNodes {
    if (p.state !== 'lost') return this.nodesFor(p.nodes, snapshot)
    try {
      return this.nodesFor(p.nodes, snapshot)
    } catch {
      return { nodes: [p.head], addresses: null }
    }
  }

  private async refuseNoFit(entry: CatalogEntry, nodes: readonly NodeName[]): Promise<void> {
    let fit: FitEstimate
    try {
      fit = await this.book.deps.estimate(entry.def.key, nodes)
    } catch (err) {
      this.book.deps.logger.warn('fit estimate failed before a placement', { model: entry.def.key, error: err })
      return
    }
    if (fit.verdict !== 'no_fit') return
    const gb = (b: number | null) => (b === null ? '?' : `${(b / 1e9).toFixed(1)} GB`)
    // A node crowded out by other processes says so (its need may not even be known).
    const crowded = (node: NodeName) =>
      fit.notes.find((t) => t.startsWith(`${node}: `) && t.includes('held by other processes'))
    const numbers = fit.nodes
      .filter((n) => n.verdict === 'no_fit')
      .map((n) => crowded(n.node) ?? `${n.node} needs ${gb(n.need_bytes)} of a ${gb(n.budget_bytes)} budget`)
    const why = numbers.length > 0 ? numbers.join(', ') : fit.notes[fit.notes.length - 1]
    throw conflict(
      `${entry.def.name} does not fit in ${modeOfNodes(nodes)} mode on ${nodes.join('+')} (${why}); send confirm_no_fit: true to place it anyway`,
    )
  }
}

/** `node3, node4 are taken by <served> (<id>)`: the chosen nodes a placement holds. */
function takenText(p: Placement, chosen: readonly NodeName[]): string {
  const shared = p.nodes.filter((n) => chosen.includes(n))
  return `${shared.join(', ')} ${shared.length > 1 ? 'are' : 'is'} taken by ${p.served} (${p.id})`
}

function modeFor(entry: CatalogEntry, requested: RunMode | undefined): RunMode {
  const declared = entry.def.mode
  if (requested === undefined) return declared === 'cluster' ? 'cluster' : 'solo'
  if (declared !== 'both' && requested !== declared)
    throw badInput(`${entry.def.key} runs in ${declared} mode only, not ${requested}`)
  return requested
}
