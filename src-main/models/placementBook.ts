import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type {
  FitEstimate,
  LauncherInfo,
  Layout,
  LoadedModel,
  PlacementKeep,
  RunMode,
  SwapPhase,
  SwapStateEvent,
  ValidationResult,
} from '../contract/models'
import type { Placement, PlacementRecovery } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { HardwareSnapshot, NodeHardware } from '../contract/nodes'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import type { JobRegistry } from '../platform/jobs'
import type { SshPool, SshTarget } from '../ssh/pool'
import type { EngineSite } from './engineLoad'
import type { EngineWatch } from './engineWatch'
import { servedName, type LaunchPlan, type PlacementNodes } from './launch'
import type { PlacementStateFile } from './placementState'
import type { PlacementIntent, PlacementIntents } from './placementIntent'
import type { CatalogEntry, CatalogReader } from './types'
import type { z } from 'zod'

export type Loaded = z.infer<typeof LoadedModel>
export type Phase = z.infer<typeof SwapPhase>
/** A placement job's phase change (the `step` of `placements.changed`). */
export type PlacementStep = z.infer<typeof SwapStateEvent>
/** Says that what runs where changed, and the job's step that changed it if one did. */
export type Changed = (step?: PlacementStep) => void

/** How a placement job ended, as the requests held at the gateway need to know it. */
export type Outcome = 'ready' | 'unchanged' | 'rolled_back' | 'down'

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
  /** How long a published view waits for the hardware read (ms; VIEW_WAIT_MS when absent). */
  readonly viewWaitMs?: number
  /** Pause between two looks at what every engine serves (ms; EngineWatch's default when absent). */
  readonly watchMs?: number
  /** Whether a placement's engine has requests running or waiting (its own metrics); absent: never known busy. */
  readonly engineBusy?: (placementId: string) => boolean
  /**
   * Whether a placement has a request in flight (held or streaming): it is not unloaded then. The
   * composition passes the gateway's count; without it only the requests held here count.
   */
  readonly isBusy?: (placementId: string) => boolean
  /** Pause between two reconciler rounds (ms; the reconciler's default when absent). */
  readonly reconcileMs?: number
  /** Marks a recovery on the Cluster view's timeline (a connectivity report, which changes no state). */
  readonly timeline?: (
    subject: string,
    report: { ok: boolean; source: string; detail: string; error: string | null },
  ) => void
}

/** Who asked for a placement: the operator, the gateway's on-demand swap, or the reconciler bringing one back. */
export type PlacementOrigin = 'operator' | 'on_demand' | 'recovery'

/** The placement job in progress. */
export interface InFlight {
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
  readonly origin: PlacementOrigin
  /** How long the placement is kept (null: the default for its origin). */
  readonly keep: PlacementKeep | null
  /** The intents of the placements it displaces, put back when it fails and they are back. */
  displacedIntents: readonly PlacementIntent[]
  readonly title: string
  readonly startedAt: number
  readonly jobId: string
  phase: Phase
  launchedAt: number | null
  readonly expectedMs: number | null
  readonly outcome: Promise<Outcome>
  settle(o: Outcome): void
}

/**
 * What the placement parts share (docs/placements.md): the placements by id, the job in progress,
 * the nodes last seen unreachable, the state file and the look at every engine. Each part (views,
 * jobs, discovery, routing) reads and changes what runs where here and nowhere else.
 */
export class PlacementBook {
  readonly placedById = new Map<string, Placement>()
  changing: InFlight | null = null
  learned: Promise<void> = Promise.resolve()
  /** The nodes SSH could not reach at the last hardware probe: their placements show lost (routing asks the engines). */
  unreachable = new Set<NodeName>()
  /** Tells the views that what runs where changed (set once the views exist). */
  changed: () => void = () => undefined
  /** What the reconciler is doing about a placement (set once it exists). */
  recoveryOf: (id: string) => PlacementRecovery | null = () => null

  constructor(
    readonly deps: PlacementDeps,
    readonly state: PlacementStateFile,
    /** What the operator asked to run where, written before a job changes anything. */
    readonly intents: PlacementIntents,
    /** What each engine serves, looked at again every few seconds: routing reads it, never SSH. */
    readonly watch: EngineWatch,
  ) {}

  all(): Placement[] {
    return [...this.placedById.values()]
  }

  node1Placement(): Placement | undefined {
    return this.all().find((p) => p.nodes.includes('node1'))
  }

  /** The model on node1 (the spec's "loaded model"). */
  loaded(): Loaded | null {
    const p = this.node1Placement()
    if (p === undefined || p.state === 'lost') return null
    const mode: RunMode | null = p.layout?.mode ?? (p.state === 'unknown' ? null : modeOfNodes(p.nodes))
    return { key: p.key, served: p.served, mode, since: p.since, layout: p.layout }
  }

  configured(): NodeName[] {
    return this.deps.nodeNames().filter((n) => this.deps.targetOf(n) !== null)
  }

  save(): void {
    this.state.save(this.all())
  }

  etaS(s: InFlight): number | null {
    if (s.expectedMs === null) return null
    const now = this.deps.clock.now()
    const since = s.launchedAt ?? now
    return Math.max(0, Math.round((s.expectedMs - (now - since)) / 1000))
  }

  site(head: NodeName): EngineSite {
    return {
      baseUrl: this.deps.engineUrl(head),
      head: this.deps.targetOf(head),
      container: this.deps.config.llm.container,
    }
  }

  /** The placement job's record in the intent file (it outlives a kill -9): phase, then its end. */
  noteJob(s: InFlight, end: { state: 'succeeded' | 'failed'; error: string | null } | null = null): void {
    this.intents.noteJob({
      id: s.jobId,
      title: s.title,
      action: s.action,
      placement_id: s.id,
      phase: s.phase,
      state: end?.state ?? 'running',
      started_at: s.startedAt,
      finished_at: end === null ? null : this.deps.clock.now(),
      error: end?.error ?? null,
    })
  }

  entryServing(served: string): CatalogEntry | undefined {
    return this.deps.catalog.list().find((e) => servedName(e) === served)
  }
}

/** Whether a job changes what serves `model` (null: the placement that includes node1). */
export function touches(s: InFlight, model: string | null): boolean {
  if (model === null) return touchesNode1(s)
  return matchesJob(s, model) || s.displaces.some((d) => d.placement.served === model || d.placement.key === model)
}

export function matchesJob(s: InFlight, model: string | null): boolean {
  if (s.action !== 'place' || s.entry === null) return false
  if (model === null) return s.nodes.includes('node1')
  return s.entry.def.key === model || s.plan?.served === model
}

export function touchesNode1(s: InFlight): boolean {
  return s.nodes.includes('node1') || s.displaces.some((d) => d.placement.nodes.includes('node1'))
}

/** A node's row of a hardware snapshot (undefined: not in it). */
export function nodeHardware(snapshot: HardwareSnapshot | null, node: NodeName): NodeHardware | undefined {
  return snapshot?.[node]
}

export function modeOfNodes(nodes: readonly NodeName[]): RunMode {
  return nodes.length > 1 ? 'cluster' : 'solo'
}

/** `solo on node1` or `cluster on node1+node2, tensor parallel 2`: what a job title and log say. */
export function layoutLabel(layout: Layout): string {
  if (layout.mode === 'solo') return `solo on ${layout.nodes[0] ?? 'node1'}`
  return `cluster on ${layout.nodes.join('+')}, tensor parallel ${layout.tensor_parallel}`
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** 503 with Retry-After, in the words a client shows: a swap is in progress. */
export function swapUnavailable(message: string, retryAfterS: number): ApiError {
  return new ApiError('swap_in_progress', message, {
    status: 503,
    headers: { 'Retry-After': String(Math.max(1, Math.round(retryAfterS))) },
  })
}
