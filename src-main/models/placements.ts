import path from 'node:path'
import type { Config } from '../config/load'
import { ApiError, badInput, conflict, notFound } from '../contract/errors'
import { SWAP_PHASE_TITLES } from '../contract/models'
import type {
  FitEstimate,
  LauncherInfo,
  Layout,
  LoadedModel,
  RunMode,
  SwapPhase,
  SwapView,
  ValidationResult,
} from '../contract/models'
import type { Placement, PlacementsView } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { HardwareSnapshot, NodeHardware } from '../contract/nodes'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../platform/jobs'
import type { SshPool, SshTarget } from '../ssh/pool'
import { LoadFailed, servedNow, waitServed, type EngineSite } from './engineLoad'
import { DEFAULT_GPU_MEMORY_UTILIZATION } from './fit'
import {
  launchPlan,
  LaunchRefused,
  nodesForMode,
  servedName,
  stopCommand,
  type LaunchPlan,
  type PlacementNodes,
} from './launch'
import { EngineWatch } from './engineWatch'
import { answers, node1Route, noCopyAnswers, routeOf, serves, type EngineView } from './placementRoutes'
import { placementId, PlacementStateFile, type PlacementRecord } from './placementState'
import type { CatalogEntry, CatalogReader, ModelRouter, PlacementRoute, SwapStatus } from './types'
import type { z } from 'zod'

type Loaded = z.infer<typeof LoadedModel>
type Phase = z.infer<typeof SwapPhase>

/** How a placement job ended, as the requests held at the gateway need to know it. */
type Outcome = 'ready' | 'unchanged' | 'rolled_back' | 'down'

const LAUNCH_TIMEOUT_MS = 10 * 60_000
const STOP_TIMEOUT_MS = 3 * 60_000
/** The look at each node's engine while the daemon starts. */
const START_PROBE_MS = 2_000
/** Log lines of a failed model kept with its job. */
const KEEP_FAILED_LINES = 30
/** The title prefix vLLM gives its engine and worker processes (what nvidia-smi lists). */
const ENGINE_PROCESS = 'VLLM::'

export interface PlacementValidator {
  validate(entry: CatalogEntry, on: PlacementNodes, signal?: AbortSignal): Promise<ValidationResult>
}

export interface PlacementDeps {
  readonly config: Config
  readonly clock: Clock
  readonly logger: Logger
  readonly jobs: JobRegistry
  readonly events: EventPublisher
  readonly catalog: CatalogReader
  readonly validator: PlacementValidator
  readonly pool: Pick<SshPool, 'exec'>
  /** Every configured node, node1 first. */
  readonly nodeNames: () => readonly NodeName[]
  readonly targetOf: (node: NodeName) => SshTarget | null
  /** The engine's origin on a head (node1's is the llm service's address); null when unknown. */
  readonly engineUrl: (head: NodeName) => string | null
  /** What to set when node1's llm is not configured (the services' hint). */
  readonly llmHint?: () => string | null
  readonly estimate: (key: string, nodes: readonly NodeName[]) => Promise<FitEstimate>
  /** vLLM's refusal when tensor parallel k does not divide the model's attention heads, or null. */
  readonly headsCheck: (key: string, nodes: readonly NodeName[]) => Promise<string | null>
  /** The launcher on a node as last read: commands are built for its generation. */
  readonly launcherOn: (node: NodeName) => Promise<LauncherInfo>
  /** Whether a node's launcher checkout was found at its last read (null: not read yet). */
  readonly launcherKnown?: (node: NodeName) => boolean | null
  /** The last hardware snapshot (reachability, cluster-link addresses, memory); null when none. */
  readonly hardware: () => Promise<HardwareSnapshot | null>
  /** Pause between looks at a loading model (ms). */
  readonly pollMs?: number
  /** Pause between two looks at what every engine serves (ms; EngineWatch's default when absent). */
  readonly watchMs?: number
}

export interface PlaceOptions {
  /** Stop the placements on the chosen nodes (the spec's swap always does). */
  readonly displace?: boolean
  readonly confirmNoFit?: boolean
  /** Started by the spec's single-llm swap (its words in messages). */
  readonly spec?: boolean
}

/** The placement job in progress. */
interface InFlight {
  readonly id: string
  readonly action: 'place' | 'stop'
  readonly entry: CatalogEntry | null
  readonly nodes: readonly NodeName[]
  readonly on: PlacementNodes
  readonly plan: LaunchPlan | null
  readonly launcher: LauncherInfo | null
  /** Placements it stops (every one sharing a node), each with the nodes its own stop needs. */
  readonly displaces: readonly { readonly placement: Placement; readonly on: PlacementNodes }[]
  /** Started by the spec's single-llm swap (its words in messages). */
  readonly spec: boolean
  readonly jobId: string
  phase: Phase
  launchedAt: number | null
  readonly expectedMs: number | null
  readonly outcome: Promise<Outcome>
  settle(o: Outcome): void
}

/**
 * The placements (docs/placements.md): which model runs on which nodes, the jobs that place and
 * stop them (validate, stop what is displaced, launch, load, ready; rollback of only what was
 * displaced), the gateway's routing by model name and hold while a job touches a model, and the
 * spec's single-llm swap as the placement that includes node1.
 */
export class PlacementManager implements SwapStatus, ModelRouter {
  private readonly placedById = new Map<string, Placement>()
  private holding = 0
  private changing: InFlight | null = null
  private learned: Promise<void> = Promise.resolve()
  private readonly state: PlacementStateFile
  /** What each engine serves, looked at again every few seconds: routing reads it, never SSH. */
  private readonly watch: EngineWatch
  private readonly view: EngineView
  /** The nodes SSH could not reach at the last hardware probe: their placements show lost (routing asks the engines). */
  private unreachable = new Set<NodeName>()
  /** An unknown model seen answering on a head at the last look: taken in when the next look agrees. */
  private sighted = new Map<NodeName, string>()

  constructor(private readonly deps: PlacementDeps) {
    this.state = new PlacementStateFile(path.join(deps.config.paths.dataDir, 'swap-state.json'), deps.logger)
    this.watch = new EngineWatch({
      engines: () => this.heads(),
      now: () => deps.clock.now(),
      seen: (head, names) => this.observe(head, names),
      intervalMs: deps.watchMs,
    })
    this.view = { baseOf: (head) => deps.engineUrl(head), namesOf: (base) => this.watch.names(base) }
    // A catalog change can name a model found running (a custom entry added for it).
    deps.catalog.onChange(() => {
      for (const p of this.placedById.values())
        if (p.key === null) this.placedById.set(p.id, { ...p, key: this.entryServing(p.served)?.def.key ?? null })
    })
  }

  /** Learns what each node's engine serves now (short probes, so a dead host delays the start by little). */
  async start(): Promise<void> {
    this.learned = this.learn().catch((err: unknown) =>
      this.deps.logger.warn('could not learn the placed models', { error: err }),
    )
    await this.learned
    this.watch.start()
  }

  async stop(): Promise<void> {
    this.watch.stop()
    await this.learned
  }

  /** Resolves once the placements are known (tests, and the first GET). */
  ready(): Promise<void> {
    return this.learned
  }

  /** Requests waiting at the gateway for a placement job. */
  get held(): number {
    return this.holding
  }

  busy(): boolean {
    return this.changing !== null
  }

  /** A job is changing what node1 serves (the llm service's container is not the services' to touch then). */
  holdsLlm(): boolean {
    return this.changing !== null && this.touchesNode1(this.changing)
  }

  /** The model on node1 (the spec's "loaded model"). */
  loaded(): Loaded | null {
    const p = this.node1Placement()
    if (p === undefined || p.state === 'lost') return null
    const mode: RunMode | null = p.layout?.mode ?? (p.state === 'unknown' ? null : modeOfNodes(p.nodes))
    return { key: p.key, served: p.served, mode, since: p.since, layout: p.layout }
  }

  all(): Placement[] {
    return [...this.placedById.values()]
  }

  placementsOf(key: string): string[] {
    return this.all()
      .filter((p) => p.key === key)
      .map((p) => p.id)
  }

  // ——— views ———

  /** The spec's swap view: node1's model and the job that touches node1. */
  async swapView(): Promise<SwapView> {
    await this.learned
    const s = this.changing !== null && this.touchesNode1(this.changing) ? this.changing : null
    const job = s ? this.deps.jobs.get(s.jobId) : (this.deps.jobs.list('swap')[0] ?? null)
    return {
      loaded: this.loaded(),
      job,
      swapping:
        s && s.entry !== null && s.action === 'place'
          ? {
              key: s.entry.def.key,
              mode: modeOfNodes(s.nodes),
              phase: s.phase,
              eta_s: this.etaS(s),
              layout: s.plan?.layout ?? null,
            }
          : null,
    }
  }

  async placementsView(): Promise<PlacementsView> {
    await this.learned
    const snapshot = await this.deps.hardware().catch(() => null)
    const s = this.changing
    return {
      placements: this.all().map((p) => ({ ...p, memory_bytes_per_node: this.reservation(p, snapshot) })),
      nodes: this.deps.nodeNames().map((name) => this.nodeRow(name, snapshot)),
      changing:
        s === null
          ? null
          : {
              id: s.id,
              key: s.entry?.def.key ?? null,
              action: s.action,
              phase: s.phase,
              displaces: s.displaces.map((d) => d.placement.id),
              eta_s: this.etaS(s),
              job_id: s.jobId,
            },
      job: s ? this.deps.jobs.get(s.jobId) : (this.deps.jobs.list('swap')[0] ?? null),
    }
  }

  private nodeRow(name: NodeName, snapshot: HardwareSnapshot | null): PlacementsView['nodes'][number] {
    const hw = nodeHardware(snapshot, name)
    const on = this.all().find((p) => p.nodes.includes(name))
    return {
      name,
      placement_id: on?.id ?? null,
      reachable: hw === undefined || hw.status === 'not_configured' ? null : hw.status === 'ok',
      launcher: this.deps.launcherKnown?.(name) ?? null,
      ram_total_bytes: hw?.status === 'ok' ? (hw.ram?.total_bytes ?? null) : null,
      other_bytes: this.othersOn(name, snapshot),
    }
  }

  /**
   * Memory held on a node by GPU processes that are not an engine — the speech services and
   * anything else a placement there would not stop. vLLM titles its processes `VLLM::EngineCore`,
   * `VLLM::Worker_TP0`, …, so an engine's memory (placed, leftover or loading) is left out: the
   * job stops the llm container on its nodes before launching. Null when the node gave no list.
   */
  othersOn(node: NodeName, snapshot: HardwareSnapshot | null): number | null {
    const hw = nodeHardware(snapshot, node)
    if (hw?.status !== 'ok' || hw.gpu === null) return null
    return hw.gpu.processes.filter((p) => !p.name.startsWith(ENGINE_PROCESS)).reduce((sum, p) => sum + p.used_bytes, 0)
  }

  /** What the engine reserves on each node: gpu-memory-utilization × the head's RAM. */
  private reservation(p: Placement, snapshot: HardwareSnapshot | null): number | null {
    const hw = nodeHardware(snapshot, p.head)
    if (hw?.status !== 'ok' || hw.ram === null) return null
    const entry = p.key === null ? undefined : this.deps.catalog.list().find((e) => e.def.key === p.key)
    const util = entry?.effectiveKnobs['gpu-memory-utilization'] ?? DEFAULT_GPU_MEMORY_UTILIZATION
    return Math.floor(hw.ram.total_bytes * util)
  }

  // ——— starting jobs ———

  /** The spec's swap: replaces the placement on node1 (solo) or the cluster placement. */
  async begin(key: string, requested?: RunMode, confirmNoFit = false): Promise<{ job_id: string }> {
    await this.learned
    const entry = this.deps.catalog.get(key)
    const mode = modeFor(entry, requested)
    if (mode === 'cluster' && this.deps.targetOf('node2') === null)
      throw conflict(`${entry.def.name} in cluster mode needs node2: set NODE2_HOST and NODE2_USER`)
    let nodes: NodeName[]
    try {
      nodes = nodesForMode(entry.launchArgs, mode, this.configured())
    } catch (err) {
      if (err instanceof LaunchRefused) throw conflict(`${entry.def.name} cannot be launched ${mode}: ${err.message}`)
      throw err
    }
    const { job_id } = await this.place(key, nodes, { displace: true, confirmNoFit, spec: true })
    return { job_id }
  }

  /**
   * Places a catalog model on `nodes` (head first): a job. Refused with the reason before anything
   * stops: a node not configured, unreachable or (without `displace`) taken; a launch the head's
   * launcher cannot make; a tensor-parallel size the heads do not divide; no fit (without `confirmNoFit`).
   */
  async place(
    key: string,
    nodes: readonly NodeName[],
    opts: PlaceOptions = {},
  ): Promise<{ job_id: string; id: string }> {
    await this.learned
    const entry = this.deps.catalog.get(key)
    this.refuseWhileBusy()
    const snapshot = await this.deps.hardware().catch(() => null)
    this.refuseNodes(nodes, snapshot)
    const taken = this.all().filter((p) => p.nodes.some((n) => nodes.includes(n)))
    if (taken.length > 0 && opts.displace !== true)
      throw conflict(
        `${taken.map((p) => takenText(p, nodes)).join('; ')}; send displace: true to stop ${taken.length > 1 ? 'them' : 'it'} and place ${entry.def.name}`,
      )
    const on = this.nodesFor(nodes, snapshot)
    const head = nodes[0] as NodeName
    const launcher = await this.deps.launcherOn(head)
    let plan: LaunchPlan
    try {
      plan = launchPlan(this.deps.config, entry, on, launcher)
    } catch (err) {
      const how = nodes.length > 1 ? `across ${nodes.join('+')}` : `on ${head}`
      if (err instanceof LaunchRefused) throw conflict(`${entry.def.name} cannot be launched ${how}: ${err.message}`)
      throw badInput(`${entry.def.name} cannot be launched: ${(err as Error).message}`)
    }
    const heads = await this.deps.headsCheck(key, nodes).catch(() => null)
    if (heads !== null) throw badInput(`${entry.def.name} cannot run tensor parallel ${nodes.length}: ${heads}`)
    if (opts.confirmNoFit !== true) await this.refuseNoFit(entry, nodes)
    const displaces = taken.map((placement) => ({ placement, on: this.nodesFor(placement.nodes, snapshot) }))
    return this.startJob({ action: 'place', entry, nodes, on, plan, launcher, displaces, spec: opts.spec === true })
  }

  /** Stops a placement (a job): its engine stops and its nodes are free. */
  async stopPlacement(id: string): Promise<{ job_id: string }> {
    await this.learned
    const placement = this.placedById.get(id)
    if (placement === undefined)
      throw notFound(
        `no placement ${id}; placed: ${
          this.all()
            .map((p) => p.id)
            .join(', ') || 'none'
        }`,
      )
    this.refuseWhileBusy()
    const snapshot = await this.deps.hardware().catch(() => null)
    const on = this.stopOn(placement, snapshot)
    const launcher = await this.deps.launcherOn(placement.head)
    const { job_id } = this.startJob({
      action: 'stop',
      entry: null,
      nodes: placement.nodes,
      on,
      plan: null,
      launcher,
      displaces: [{ placement, on }],
      spec: false,
    })
    return { job_id }
  }

  private startJob(
    j: Pick<InFlight, 'action' | 'entry' | 'nodes' | 'on' | 'plan' | 'launcher' | 'displaces' | 'spec'>,
  ): { job_id: string; id: string } {
    const id = placementId(j.nodes)
    const name = j.entry?.def.name ?? j.displaces[0]?.placement.served ?? id
    const title =
      j.action === 'stop'
        ? `Stop ${name} on ${id}`
        : j.spec && j.plan !== null
          ? `Swap to ${name} (${layoutLabel(j.plan.layout)})`
          : `Place ${name} on ${id}`
    let settle!: (o: Outcome) => void
    const outcome = new Promise<Outcome>((r) => (settle = r))
    const record = this.deps.jobs.start('swap', title, (job) =>
      j.action === 'stop' ? this.runStop(job) : this.runPlace(job),
    )
    const key = j.entry?.def.key
    this.changing = {
      ...j,
      id,
      jobId: record.id,
      phase: j.action === 'stop' ? 'stopping' : 'validating',
      launchedAt: null,
      expectedMs: key === undefined ? null : this.state.loadMs(key),
      outcome,
      settle,
    }
    this.publishView()
    return { job_id: record.id, id }
  }

  private refuseWhileBusy(): void {
    const running = (kind: 'download' | 'swap') => this.deps.jobs.list(kind).find((j) => j.state === 'running')
    const download = running('download')
    if (download) throw conflict(`a download is running (${download.id}: ${download.title}); swap when it has finished`)
    const swap = running('swap')
    if (swap) throw conflict(`a swap job is already running (${swap.id}: ${swap.title})`)
  }

  /** Every node configured and reachable at the last probe; nothing is stopped otherwise. */
  private refuseNodes(nodes: readonly NodeName[], snapshot: HardwareSnapshot | null): void {
    for (const node of nodes) {
      if (this.deps.targetOf(node) === null)
        throw badInput(`${node} is not configured (configured: ${this.configured().join(', ')})`)
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
    const all = this.configured()
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
      fit = await this.deps.estimate(entry.def.key, nodes)
    } catch (err) {
      this.deps.logger.warn('fit estimate failed before a placement', { model: entry.def.key, error: err })
      return
    }
    if (fit.verdict !== 'no_fit') return
    const gb = (b: number | null) => (b === null ? '?' : `${(b / 1e9).toFixed(1)} GB`)
    const numbers = fit.nodes
      .filter((n) => n.verdict === 'no_fit')
      .map((n) => `${n.node} needs ${gb(n.need_bytes)} of a ${gb(n.budget_bytes)} budget`)
    const why = numbers.length > 0 ? numbers.join(', ') : fit.notes[fit.notes.length - 1]
    throw conflict(
      `${entry.def.name} does not fit in ${modeOfNodes(nodes)} mode on ${nodes.join('+')} (${why}); send confirm_no_fit: true to place it anyway`,
    )
  }

  // ——— running jobs ———

  private async runPlace(job: JobControl): Promise<{ loaded: Loaded | null; placement: Placement }> {
    const s = this.changing as InFlight
    const entry = s.entry as CatalogEntry
    const plan = s.plan as LaunchPlan
    let stopped = false
    try {
      this.phase(job, s, 'validating')
      job.log(
        `layout: ${layoutLabel(plan.layout)}; ${s.launcher?.generation ?? 'unknown'} launcher, image ${plan.image}`,
      )
      job.log(`$ ${plan.cmdArgs.join(' ')}`)
      const v = await this.deps.validator.validate(entry, s.on, job.signal)
      // A throwaway container of the model's own image answers: its no is definitive. When the
      // validation itself could not run (ok null), the launch decides, except without a connection.
      if (v.ok === false || (v.ok === null && v.stage === 'connect'))
        throw new Error(`validation failed (${v.stage}): ${v.error ?? ''}`)
      job.log(
        v.ok === null
          ? `not validated (${v.stage}): ${v.error ?? ''}`
          : `arguments accepted by ${v.parser ?? "vLLM's parser"}`,
      )
      stopped = true
      await this.stopDisplaced(job, s)
      await this.bringUp(job, s, s.on, plan, (p) => this.phase(job, s, p))
      const placement = this.record(s.id, entry.def.key, plan, s.nodes)
      if (s.launchedAt !== null) this.state.rememberLoad(entry.def.key, this.deps.clock.now() - s.launchedAt)
      this.placedById.set(s.id, placement)
      this.save()
      this.phase(job, s, 'ready', `${entry.def.name} answers`)
      s.settle('ready')
      return { loaded: this.loaded(), placement }
    } catch (err) {
      const outcome = stopped
        ? await this.recover(job, s, err)
        : { outcome: 'unchanged' as const, message: `${failedText(s)}: ${errorText(err)}; nothing was stopped` }
      s.settle(outcome.outcome)
      this.phase(job, s, 'failed', outcome.message)
      throw new Error(outcome.message, { cause: err })
    } finally {
      this.changing = null
      this.publishView()
    }
  }

  private async runStop(job: JobControl): Promise<{ stopped: string }> {
    const s = this.changing as InFlight
    try {
      await this.stopDisplaced(job, s)
      this.phase(job, s, 'ready', `${s.id} stopped`)
      s.settle('down')
      return { stopped: s.id }
    } catch (err) {
      s.settle('unchanged')
      this.phase(job, s, 'failed', `stopping ${s.id} failed: ${errorText(err)}`)
      throw err
    } finally {
      this.changing = null
      this.publishView()
    }
  }

  /**
   * Stops every placement the job displaces (best effort: a launcher that cannot stop — nothing
   * ran, autodetection failed — must not block the launch; a container still up shows in the
   * launch and load that follow). With nothing displaced on the head, its stop clears a stray engine.
   */
  private async stopDisplaced(job: JobControl, s: InFlight): Promise<void> {
    this.phase(job, s, 'stopping')
    const stops = s.displaces.map((d) => d.on)
    if (!s.displaces.some((d) => d.placement.head === s.nodes[0]) && s.action === 'place') stops.push(s.on)
    for (const on of stops) {
      const code = await this.onHead(job, on, (l) => stopCommand(this.deps.config, on, l), STOP_TIMEOUT_MS, null)
      if (code !== 0) job.log(`the launcher's stop on ${on.nodes[0]} exited with status ${code ?? 'unknown'}; going on`)
    }
    for (const d of s.displaces) {
      this.placedById.delete(d.placement.id)
      const base = this.deps.engineUrl(d.placement.head)
      if (base !== null) this.watch.record(base, null)
    }
    this.save()
    this.publishView()
  }

  /** Launches a plan on its head and waits until the served model answers there. */
  private async bringUp(
    job: JobControl,
    s: InFlight,
    on: PlacementNodes,
    plan: LaunchPlan,
    step: (p: Phase) => void,
  ): Promise<void> {
    step('launching')
    s.launchedAt = this.deps.clock.now()
    await this.onHead(job, on, () => plan.launchCmd, LAUNCH_TIMEOUT_MS, 'the launcher')
    step('loading')
    const site = this.site(on.nodes[0] as NodeName)
    const names = await waitServed(job, site, plan.served, {
      pool: this.deps.pool,
      now: () => this.deps.clock.now(),
      loadTimeoutS: this.deps.config.models.loadTimeoutS,
      pollMs: this.deps.pollMs ?? 500,
      etaS: () => this.etaS(s),
    })
    // Routed at once, not at the next look.
    if (site.baseUrl !== null) this.watch.record(site.baseUrl, names)
  }

  /** Runs a command on a placement's head with its output in the job log; a non-zero exit fails the step named `what`. */
  private async onHead(
    job: JobControl,
    on: PlacementNodes,
    command: (launcher: LauncherInfo) => string,
    timeoutMs: number,
    what: string | null,
    cancellable = true,
  ): Promise<number | null> {
    const head = on.nodes[0] as NodeName
    const target = this.deps.targetOf(head)
    if (target === null) throw new Error(`${head} is not configured`)
    const launcher = await this.deps.launcherOn(head)
    const r = await this.deps.pool.exec(target, command(launcher), {
      timeoutMs,
      signal: cancellable ? job.signal : undefined,
      onLine: (line) => job.log(line),
    })
    if (r.code !== 0 && what !== null) throw new Error(`${what} exited with status ${r.code ?? r.signal ?? 'unknown'}`)
    return r.code
  }

  /** After a failed placement: keeps the failed model's log, stops it, relaunches only what it displaced. */
  private async recover(job: JobControl, s: InFlight, err: unknown): Promise<{ outcome: Outcome; message: string }> {
    if (err instanceof LoadFailed && err.lines.length > 0) {
      job.log(`— last log lines of ${s.entry?.def.name ?? s.id}:`)
      for (const l of err.lines.slice(-KEEP_FAILED_LINES)) job.log(l)
    }
    const failed = `${failedText(s)}: ${errorText(err)}`
    // Whatever follows, the failed engine goes (a cancelled job too: its timeout still bounds the
    // stop): a container still loading would hold nodes shown free.
    const stop = (l: LauncherInfo): string => stopCommand(this.deps.config, s.on, l)
    await this.onHead(job, s.on, stop, STOP_TIMEOUT_MS, null, false).catch(() => null)
    if (s.displaces.length === 0)
      return { outcome: 'down', message: `${failed}; no model was loaded before, nothing to roll back to` }
    if (job.signal.aborted) return { outcome: 'down', message: `${failed}; cancelled, no rollback` }
    if (!this.deps.config.models.rollback)
      return { outcome: 'down', message: `${failed}; rollback is off (SWAP_ROLLBACK), the llm is left stopped` }
    this.phase(job, s, 'rolling_back', `relaunching ${s.displaces.map((d) => d.placement.served).join(', ')}`)
    const results: string[] = []
    let all = true
    for (const d of s.displaces) {
      const r = await this.relaunch(job, s, d.placement, d.on)
      results.push(r.message)
      all &&= r.ok
    }
    this.save()
    return { outcome: all ? 'rolled_back' : 'down', message: `${failed}; ${results.join('; ')}` }
  }

  private async relaunch(
    job: JobControl,
    s: InFlight,
    prev: Placement,
    on: PlacementNodes,
  ): Promise<{ ok: boolean; message: string }> {
    const back = prev.key === null ? undefined : this.deps.catalog.list().find((e) => e.def.key === prev.key)
    if (back === undefined) return { ok: false, message: `${prev.served} is not in the catalog, no rollback` }
    try {
      const plan = launchPlan(this.deps.config, back, on, await this.deps.launcherOn(on.nodes[0] as NodeName))
      await this.bringUp(job, s, on, plan, (p) => job.log(`— ${SWAP_PHASE_TITLES[p].toLowerCase()} (${prev.id})`))
      this.placedById.set(prev.id, this.record(prev.id, back.def.key, plan, on.nodes))
      return { ok: true, message: `rolled back to ${back.def.name}` }
    } catch (rbErr) {
      return { ok: false, message: `the rollback to ${back.def.name} failed too: ${errorText(rbErr)}` }
    }
  }

  private record(id: string, key: string, plan: LaunchPlan, nodes: readonly NodeName[]): Placement {
    return {
      id,
      key,
      served: plan.served,
      nodes: [...nodes],
      head: nodes[0] as NodeName,
      layout: plan.layout,
      state: 'ready',
      reason: null,
      since: this.deps.clock.now(),
      memory_bytes_per_node: null,
    }
  }

  private phase(job: JobControl, s: InFlight, phase: Phase, detail: string | null = null): void {
    s.phase = phase
    job.phase(SWAP_PHASE_TITLES[phase])
    if (detail !== null) job.log(detail)
    const touched = new Set([...s.nodes, ...s.displaces.flatMap((d) => d.placement.nodes)])
    this.deps.events.publish('swap.state', {
      key: s.entry?.def.key ?? s.displaces[0]?.placement.key ?? s.id,
      mode: modeOfNodes(s.nodes),
      phase,
      job_id: s.jobId,
      loaded: this.loaded(),
      detail,
      placement_id: s.id,
      nodes: [...touched],
    })
    this.publishView()
  }

  private publishView(): void {
    void this.placementsView().then(
      (view) => this.deps.events.publish('placements.changed', view),
      (err: unknown) => this.deps.logger.warn('could not publish the placements', { error: err }),
    )
  }

  private etaS(s: InFlight): number | null {
    if (s.expectedMs === null) return null
    const since = s.launchedAt ?? this.deps.clock.now()
    return Math.max(0, Math.round((s.expectedMs - (this.deps.clock.now() - since)) / 1000))
  }

  private save(): void {
    this.state.save(this.all())
  }

  // ——— routing (ModelRouter) ———

  routeNow(model: string | null): readonly PlacementRoute[] | null {
    const s = this.changing
    if (s !== null && this.touches(s, model)) return null
    if (this.wouldStartOnDemand(model)) return null
    const copies = this.copies(model)
    const ready = this.answering(copies)
    if (ready.length > 0) return ready
    // A miss is looked at again before it goes on (admit); within a second of the last look it goes on at once.
    if (this.watch.due()) return null
    try {
      return this.unready(model, copies)
    } catch {
      return null
    }
  }

  placed(): readonly PlacementRoute[] {
    return this.answering(this.all())
  }

  relook(): void {
    void this.watch.refresh()
  }

  /**
   * Where a request for `model` may go (ModelRouter.admit): waits while a job touches that model,
   * starts a placement on demand when allowed, looks at the engines again when nothing answers for
   * it, then answers with the copies that answer, node1's llm, or 503.
   */
  async admit(model: string | null, signal: AbortSignal): Promise<readonly PlacementRoute[]> {
    if (this.wouldStartOnDemand(model)) await this.onDemand(model as string)
    const s = this.changing
    if (s !== null && this.touches(s, model)) {
      const result = await this.hold(s, signal)
      if (result === 'down' && s.action === 'place' && this.matchesJob(s, model))
        throw swapUnavailable(
          `the swap to ${s.entry?.def.key ?? s.id} failed and no model is loaded (the rollback failed too)`,
          60,
        )
    }
    let ready = this.answering(this.copies(model))
    if (ready.length > 0) return ready
    await this.watch.refresh()
    if (signal.aborted) throw signal.reason
    const copies = this.copies(model)
    ready = this.answering(copies)
    return ready.length > 0 ? ready : this.unready(model, copies)
  }

  /** The placements serving `model` (null: the one including node1). */
  private copies(model: string | null): Placement[] {
    if (model === null) return this.all().filter((p) => p.nodes.includes('node1'))
    const all = this.all().filter((p) => serves(p, model, this.view))
    // A served name wins over another engine's alias or catalog key of the same spelling.
    const named = all.filter((p) => p.served === model)
    return named.length > 0 ? named : all
  }

  /** The routes of the copies whose engines answer. */
  private answering(copies: readonly Placement[]): PlacementRoute[] {
    const out: PlacementRoute[] = []
    for (const p of copies) {
      const route = answers(p, this.view) ? routeOf(p, this.view) : null
      if (route !== null) out.push(route)
    }
    return out
  }

  /** No copy answers: node1's llm when the model is not placed or one copy is on node1 (502 if it is down), else 503. */
  private unready(model: string | null, copies: readonly Placement[]): PlacementRoute[] {
    const node1 = this.node1Placement()
    if (model === null || copies.length === 0 || copies.some((p) => p.nodes.includes('node1')))
      return [node1Route(node1, this.deps.engineUrl('node1'), this.deps.llmHint?.() ?? null)]
    throw noCopyAnswers(model, copies)
  }

  private find(model: string): Placement | undefined {
    return this.copies(model)[0]
  }

  private node1Placement(): Placement | undefined {
    return this.all().find((p) => p.nodes.includes('node1'))
  }

  private wouldStartOnDemand(model: string | null): boolean {
    if (!this.deps.config.models.onDemand || model === null || this.changing !== null) return false
    return this.find(model) === undefined && this.catalogEntry(model) !== undefined
  }

  private catalogEntry(model: string): CatalogEntry | undefined {
    return this.deps.catalog.list().find((e) => e.def.key === model || servedName(e) === model)
  }

  /** Starts the spec's swap for a catalog model nothing serves (its fit decides: no confirm). */
  private async onDemand(model: string): Promise<void> {
    const entry = this.catalogEntry(model)
    if (entry === undefined) return
    try {
      const { job_id } = await this.begin(entry.def.key)
      this.deps.logger.info('swap on demand', { model: entry.def.key, job: job_id })
    } catch (err) {
      // Another request started it meanwhile, or it cannot start: the request goes on as it is.
      this.deps.logger.info('no swap on demand', { model: entry.def.key, reason: (err as Error).message })
    }
  }

  /** Whether a job changes what serves `model` (null: the placement that includes node1). */
  private touches(s: InFlight, model: string | null): boolean {
    if (model === null) return this.touchesNode1(s)
    return (
      this.matchesJob(s, model) || s.displaces.some((d) => d.placement.served === model || d.placement.key === model)
    )
  }

  private matchesJob(s: InFlight, model: string | null): boolean {
    if (s.action !== 'place' || s.entry === null) return false
    if (model === null) return s.nodes.includes('node1')
    return s.entry.def.key === model || s.plan?.served === model
  }

  private touchesNode1(s: InFlight): boolean {
    return s.nodes.includes('node1') || s.displaces.some((d) => d.placement.nodes.includes('node1'))
  }

  /** Waits for a job's outcome, up to SWAP_HOLD_S; 503 with Retry-After past it. */
  private async hold(s: InFlight, signal: AbortSignal): Promise<Outcome> {
    const holdMs = this.deps.config.models.holdS * 1000
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    this.holding += 1
    try {
      const result = await Promise.race([
        s.outcome,
        new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), holdMs))),
        new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason)
          if (signal.aborted) onAbort()
          else signal.addEventListener('abort', onAbort, { once: true })
        }),
      ])
      if (result === 'timeout') {
        const eta = this.etaS(s)
        const what = s.entry?.def.key ?? s.id
        throw swapUnavailable(
          `a model swap is in progress (${what}, ${SWAP_PHASE_TITLES[s.phase].toLowerCase()}); retry later`,
          eta !== null && eta > 0 ? eta : 30,
        )
      }
      return result
    } finally {
      this.holding -= 1
      clearTimeout(timer)
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }

  // ——— what runs, learned and followed ———

  /**
   * A node's reachability changed: its placements show lost, or serve again. What is shown only:
   * requests go wherever an engine answers, whatever SSH says.
   */
  followHardware(snapshot: HardwareSnapshot): void {
    let changed = false
    this.unreachable = new Set(this.configured().filter((n) => nodeHardware(snapshot, n)?.status === 'unreachable'))
    for (const p of this.all()) {
      const down = p.nodes.find((n) => nodeHardware(snapshot, n)?.status === 'unreachable')
      if (down !== undefined && (p.state !== 'lost' || p.reason !== `${down} is unreachable`)) {
        this.placedById.set(p.id, { ...p, state: 'lost', reason: `${down} is unreachable` })
        changed = true
      } else if (down === undefined && p.state === 'lost') void this.recheck(p)
    }
    if (changed) this.publishView()
  }

  /** A lost placement whose nodes answer SSH again serves again once its engine names its model. */
  private async recheck(p: Placement): Promise<void> {
    const names = await servedNow(this.deps.engineUrl(p.head), START_PROBE_MS)
    const now = this.placedById.get(p.id)
    if (now === undefined || now.state !== 'lost') return
    const back = names?.includes(p.served) === true
    const reason = back ? null : `the engine on ${p.head} does not answer`
    if (back) this.placedById.set(p.id, { ...now, state: now.layout === null ? 'unknown' : 'ready', reason })
    else if (now.reason === reason) return
    else this.placedById.set(p.id, { ...now, reason })
    this.publishView()
  }

  /** At start: each recorded placement whose head still serves it, and any other node's engine found answering. */
  private async learn(): Promise<void> {
    const records = this.state.records().filter((r) => r.nodes.every((n) => this.deps.targetOf(n) !== null))
    const seen = new Set<string>()
    const heads = new Map<string, NodeName>()
    for (const r of records) heads.set(r.id, r.nodes[0] as NodeName)
    for (const node of this.configured()) if (!records.some((r) => r.nodes.includes(node))) heads.set(node, node)
    const looks = await Promise.all(
      [...heads].map(async ([id, head]) => {
        const url = this.deps.engineUrl(head)
        // Two names for one origin (a test rig, a misconfiguration) must not make two placements.
        if (url === null || seen.has(url)) return { id, head, names: null }
        seen.add(url)
        const names = await servedNow(url, START_PROBE_MS)
        this.watch.record(url, names)
        return { id, head, names }
      }),
    )
    for (const look of looks) {
      const record = records.find((x) => x.id === look.id)
      // The recorded model when the engine still lists it among its names, else the first it lists.
      const served = record !== undefined && look.names?.includes(record.served) ? record.served : look.names?.[0]
      // A recorded placement whose engine is silent is kept, lost, until it answers or is stopped.
      const p =
        served !== undefined ? this.found(served, look.head, record) : record === undefined ? null : this.silent(record)
      if (p !== null) this.placedById.set(p.id, p)
    }
    if (this.placedById.size === 0) this.deps.logger.info('no model answers on any node')
  }

  /** Each node that may head a placement (not a worker of one), with its engine's origin. */
  private heads(): Map<NodeName, string> {
    const workers = new Set(this.all().flatMap((p) => p.nodes.slice(1)))
    const out = new Map<NodeName, string>()
    for (const node of this.configured()) {
      const url = this.deps.engineUrl(node)
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
  private observe(head: NodeName, names: readonly string[] | null): void {
    const s = this.changing
    const first = names?.[0]
    const sighted = this.sighted.get(head)
    this.sighted.delete(head)
    if (names === null || first === undefined || this.workerOf(head)) return
    if (s !== null && [...s.nodes, ...s.displaces.flatMap((d) => d.placement.nodes)].includes(head)) return
    const p = this.all().find((x) => x.head === head)
    if (p !== undefined && names.includes(p.served)) {
      if (p.state !== 'lost' || p.nodes.some((n) => this.unreachable.has(n))) return
      this.placedById.set(p.id, { ...p, state: p.layout === null ? 'unknown' : 'ready', reason: null })
    } else {
      // Two looks in a row, so an engine on its way down (a stop that just returned) is not taken in.
      if (sighted !== first) return void this.sighted.set(head, first)
      if (p !== undefined) this.placedById.delete(p.id)
      const found = this.found(first, head, undefined)
      this.placedById.set(found.id, found)
      this.deps.logger.info('an engine answers', { node: head, model: found.served })
    }
    this.publishView()
  }

  private workerOf(node: NodeName): boolean {
    return this.all().some((p) => p.nodes.indexOf(node) > 0)
  }

  private silent(r: PlacementRecord): Placement {
    const head = r.nodes[0] as NodeName
    return {
      ...r,
      head,
      state: 'lost',
      reason: `the engine on ${head} did not answer when Tandem started`,
      memory_bytes_per_node: null,
    }
  }

  /** A model found answering on a head: the recorded placement when it serves the same, else solo on the head. */
  private found(served: string, head: NodeName, r: PlacementRecord | undefined): Placement {
    const same = r !== undefined && r.served === served
    const nodes = same ? r.nodes : [head]
    return {
      id: placementId(nodes),
      key: this.entryServing(served)?.def.key ?? (same ? r.key : null),
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

  private entryServing(served: string): CatalogEntry | undefined {
    return this.deps.catalog.list().find((e) => servedName(e) === served)
  }

  private site(head: NodeName): EngineSite {
    return {
      baseUrl: this.deps.engineUrl(head),
      head: this.deps.targetOf(head),
      container: this.deps.config.llm.container,
    }
  }

  private configured(): NodeName[] {
    return this.deps.nodeNames().filter((n) => this.deps.targetOf(n) !== null)
  }
}

/** A node's row of a hardware snapshot (undefined: not in it). */
function nodeHardware(snapshot: HardwareSnapshot | null, node: NodeName): NodeHardware | undefined {
  return snapshot?.[node]
}

/** `node3, node4 are taken by <served> (<id>)`: the chosen nodes a placement holds. */
function takenText(p: Placement, chosen: readonly NodeName[]): string {
  const shared = p.nodes.filter((n) => chosen.includes(n))
  return `${shared.join(', ')} ${shared.length > 1 ? 'are' : 'is'} taken by ${p.served} (${p.id})`
}

function modeOfNodes(nodes: readonly NodeName[]): RunMode {
  return nodes.length > 1 ? 'cluster' : 'solo'
}

function modeFor(entry: CatalogEntry, requested: RunMode | undefined): RunMode {
  const declared = entry.def.mode
  if (requested === undefined) return declared === 'cluster' ? 'cluster' : 'solo'
  if (declared !== 'both' && requested !== declared)
    throw badInput(`${entry.def.key} runs in ${declared} mode only, not ${requested}`)
  return requested
}

function failedText(s: InFlight): string {
  const name = s.entry?.def.name ?? s.id
  return s.spec ? `swap to ${name} failed` : `placing ${name} on ${s.id} failed`
}

/** `solo on node1` or `cluster on node1+node2, tensor parallel 2`: what a job title and log say. */
export function layoutLabel(layout: Layout): string {
  if (layout.mode === 'solo') return `solo on ${layout.nodes[0] ?? 'node1'}`
  return `cluster on ${layout.nodes.join('+')}, tensor parallel ${layout.tensor_parallel}`
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

function retryAfter(s: number): Record<string, string> {
  return { 'Retry-After': String(Math.max(1, Math.round(s))) }
}

/** 503 with Retry-After, in the words a client shows: a swap is in progress. */
function swapUnavailable(message: string, retryAfterS: number): ApiError {
  return new ApiError('swap_in_progress', message, { status: 503, headers: retryAfter(retryAfterS) })
}
