import path from 'node:path'
import type { PlacementKeep, RunMode, SwapView } from '../contract/models'
import { notFound } from '../contract/errors'
import type { Placement, PlacementRecovery, PlacementsView } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { HardwareSnapshot } from '../contract/nodes'
import { EngineWatch } from './engineWatch'
import { PlacementBook, touchesNode1, type Loaded, type PlacementDeps, type PlacementStep } from './placementBook'
import { PlacementDiscovery } from './placementDiscovery'
import { PlacementJob } from './placementJob'
import { PlacementPlanner, type PlaceOptions } from './placementPlanner'
import { PlacementRouter } from './placementRouter'
import type { EngineView } from './placementRoutes'
import { PlacementStateFile } from './placementState'
import { jobRecordOf, PlacementIntents } from './placementIntent'
import { PlacementReconciler } from './placementReconciler'
import { PlacementViews } from './placementViews'
import type { ModelRouter, PlacementRoute, SwapStatus } from './types'

export { layoutLabel, type PlacementDeps, type PlacementValidator } from './placementBook'
export type { PlaceOptions } from './placementPlanner'

/**
 * The placements (docs/placements.md): which model runs on which nodes. A facade over its parts,
 * which share one PlacementBook: the planner that refuses or starts a job, the job that places and
 * stops (PlacementJob), discovery of what runs, the gateway's admission gate (PlacementRouter) and
 * the views. The spec's single-llm swap is the placement that includes node1.
 */
export class PlacementManager implements SwapStatus, ModelRouter {
  private readonly book: PlacementBook
  private readonly views: PlacementViews
  private readonly planner: PlacementPlanner
  private readonly discovery: PlacementDiscovery
  private readonly router: PlacementRouter
  private readonly reconciler: PlacementReconciler

  constructor(deps: PlacementDeps) {
    const state = new PlacementStateFile(path.join(deps.config.paths.dataDir, 'swap-state.json'), deps.logger)
    const watch = new EngineWatch({
      engines: () => this.discovery.heads(),
      now: () => deps.clock.now(),
      seen: (head, names) => this.discovery.observe(head, names),
      intervalMs: deps.watchMs,
    })
    const configured = deps.nodeNames().filter((n) => deps.targetOf(n) !== null)
    const intents = new PlacementIntents(
      path.join(deps.config.paths.dataDir, 'placement-intent.json'),
      deps.logger,
      configured,
      deps.clock.now(),
    )
    const book = new PlacementBook(deps, state, intents, watch)
    const views = new PlacementViews(book)
    const changed = (step?: PlacementStep): void => views.publish(step)
    book.changed = () => views.publish()
    const view: EngineView = { baseOf: (head) => deps.engineUrl(head), namesOf: (base) => watch.names(base) }
    this.book = book
    this.views = views
    this.planner = new PlacementPlanner(book, new PlacementJob(book, changed), changed)
    this.discovery = new PlacementDiscovery(book, changed)
    this.router = new PlacementRouter(book, view, (key) => this.planner.begin(key, undefined, false, 'on_demand'))
    this.reconciler = new PlacementReconciler({
      book,
      clock: deps.clock,
      place: (key, nodes, opts) => this.planner.place(key, nodes, opts),
      stop: (id) => this.planner.stopPlacement(id),
      isBusy: (id) => deps.isBusy?.(id) ?? false,
      enabled: () => deps.config.models.recovery,
      intervalMs: deps.reconcileMs,
    })
    book.recoveryOf = (id) => this.reconciler.recoveryOf(id)
    deps.catalog.onChange(() => this.discovery.catalogChanged())
    // The jobs a restart ended keep answering (GET /api/jobs/:id), with the phase they were in.
    for (const note of intents.jobRecords()) deps.jobs.remember(jobRecordOf(note))
  }

  /** What was reported and skipped in the intent file at start (malformed entries, unconfigured nodes). */
  intentProblems(): readonly string[] {
    return this.book.intents.problems
  }

  /** Learns what each node's engine serves now (short probes, so a dead host delays the start by little). */
  async start(): Promise<void> {
    this.book.learned = this.discovery
      .learn()
      .catch((err: unknown) => this.book.deps.logger.warn('could not learn the placed models', { error: err }))
    await this.book.learned
    this.book.watch.start()
    this.reconciler.start()
  }

  async stop(): Promise<void> {
    this.book.watch.stop()
    await this.reconciler.stop()
    await this.book.learned
  }

  /** The reconciler, for tests and the benchmark: a round now, and its end. */
  reconcile(): Promise<void> {
    this.reconciler.kick()
    return this.reconciler.settled()
  }

  /** The operator's Retry of a placement whose recovery failed past the limit. */
  async retry(id: string): Promise<{ id: string; recovery: PlacementRecovery | null }> {
    await this.book.learned
    if (this.book.intents.get(id) === undefined)
      throw notFound(
        `no placement ${id} is recorded to recover; recorded: ${
          this.book.intents
            .list()
            .map((i) => i.id)
            .join(', ') || 'none'
        }`,
      )
    this.reconciler.retry(id)
    return { id, recovery: this.reconciler.recoveryOf(id) }
  }

  /** Resolves once the placements are known (tests, and the first GET). */
  ready(): Promise<void> {
    return this.book.learned
  }

  /** Requests waiting at the gateway for a placement job. */
  get held(): number {
    return this.router.held
  }

  busy(): boolean {
    return this.book.changing !== null
  }

  /** A job is changing what node1 serves (the llm service's container is not the services' to touch then). */
  holdsLlm(): boolean {
    return this.book.changing !== null && touchesNode1(this.book.changing)
  }

  /** The model on node1 (the spec's "loaded model"). */
  loaded(): Loaded | null {
    return this.book.loaded()
  }

  all(): Placement[] {
    return this.book.all()
  }

  placementsOf(key: string): string[] {
    return this.all()
      .filter((p) => p.key === key)
      .map((p) => p.id)
  }

  // ——— views ———

  swapView(): Promise<SwapView> {
    return this.views.swapView()
  }

  placementsView(): Promise<PlacementsView> {
    return this.views.placementsView()
  }

  othersOn(node: NodeName, snapshot: HardwareSnapshot | null): number | null {
    return this.views.othersOn(node, snapshot)
  }

  // ——— starting jobs ———

  begin(key: string, requested?: RunMode, confirmNoFit = false): Promise<{ job_id: string }> {
    return this.planner.begin(key, requested, confirmNoFit)
  }

  place(key: string, nodes: readonly NodeName[], opts: PlaceOptions = {}): Promise<{ job_id: string; id: string }> {
    return this.planner.place(key, nodes, opts)
  }

  /** An operator's placement, kept pinned or for an idle ttl (minutes). */
  placeKept(
    key: string,
    nodes: readonly NodeName[],
    opts: PlaceOptions & { ttlMin?: number | null },
  ): Promise<{ job_id: string; id: string }> {
    const keep: PlacementKeep | null = typeof opts.ttlMin === 'number' ? { ttl_min: opts.ttlMin } : null
    return this.planner.place(key, nodes, { ...opts, keep })
  }

  stopPlacement(id: string): Promise<{ job_id: string }> {
    return this.planner.stopPlacement(id)
  }

  // ——— routing (ModelRouter) ———

  routeNow(model: string | null): readonly PlacementRoute[] | null {
    return this.router.routeNow(model)
  }

  placed(): readonly PlacementRoute[] {
    return this.router.placed()
  }

  relook(): void {
    this.router.relook()
  }

  async admit(model: string | null, signal: AbortSignal): Promise<readonly PlacementRoute[]> {
    const routes = await this.router.admit(model, signal)
    for (const r of routes) this.reconciler.touch(r.id)
    return routes
  }

  // ——— what runs, followed ———

  followHardware(snapshot: HardwareSnapshot): void {
    const before = [...this.book.unreachable].sort().join()
    this.discovery.followHardware(snapshot)
    // A node's reachability changed: what is missing may come back now (or must wait).
    if ([...this.book.unreachable].sort().join() !== before) this.reconciler.kick()
  }
}
