import { SWAP_PHASE_TITLES } from '../contract/models'
import type { LauncherInfo } from '../contract/models'
import type { Placement } from '../contract/placements'
import type { NodeName } from '../contract/schemas'
import type { JobControl } from '../platform/jobs'
import { LoadFailed, waitServed } from './engineLoad'
import { launchPlan, stopCommand, type LaunchPlan, type PlacementNodes } from './launch'
import {
  errorText,
  layoutLabel,
  modeOfNodes,
  type InFlight,
  type Loaded,
  type Outcome,
  type Changed,
  type Phase,
  type PlacementStep,
  type PlacementBook,
} from './placementBook'
import { unverifiedText, verifyStopped } from './placementStop'
import type { CatalogEntry } from './types'

const LAUNCH_TIMEOUT_MS = 10 * 60_000
const STOP_TIMEOUT_MS = 3 * 60_000
/** Log lines of a failed model kept with its job. */
const KEEP_FAILED_LINES = 30

/**
 * The placement job once started (docs/placements.md): validate, stop what is displaced, launch,
 * load, ready; after a failure the failed engine stops and only what it displaced is relaunched.
 */
export class PlacementJob {
  constructor(
    private readonly book: PlacementBook,
    private readonly changed: Changed,
  ) {}

  async runPlace(job: JobControl): Promise<{ loaded: Loaded | null; placement: Placement }> {
    const { book } = this
    const s = book.changing as InFlight
    const entry = s.entry as CatalogEntry
    const plan = s.plan as LaunchPlan
    let stopped = false
    try {
      this.phase(job, s, 'validating')
      job.log(
        `layout: ${layoutLabel(plan.layout)}; ${s.launcher?.generation ?? 'unknown'} launcher, image ${plan.image}`,
      )
      job.log(`$ ${plan.cmdArgs.join(' ')}`)
      const v = await book.deps.validator.validate(entry, s.on, job.signal)
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
      if (s.launchedAt !== null) book.state.rememberLoad(entry.def.key, book.deps.clock.now() - s.launchedAt)
      book.placedById.set(s.id, placement)
      book.save()
      this.phase(job, s, 'ready', `${entry.def.name} answers`)
      book.noteJob(s, { state: 'succeeded', error: null })
      s.settle('ready')
      return { loaded: book.loaded(), placement }
    } catch (err) {
      const outcome = stopped
        ? await this.recover(job, s, err)
        : { outcome: 'unchanged' as const, message: `${failedText(s)}: ${errorText(err)}; nothing was stopped` }
      this.forgetFailed(s)
      s.settle(outcome.outcome)
      this.phase(job, s, 'failed', outcome.message)
      book.noteJob(s, { state: 'failed', error: outcome.message })
      throw new Error(outcome.message, { cause: err })
    } finally {
      book.changing = null
      this.changed()
    }
  }

  async runStop(job: JobControl): Promise<{ stopped: string }> {
    const { book } = this
    const s = book.changing as InFlight
    try {
      await this.stopDisplaced(job, s)
      const p = s.displaces[0]?.placement
      const left = p === undefined ? [] : await verifyStopped(book, p.nodes)
      if (p !== undefined && left.length > 0) {
        const why = unverifiedText(left)
        // Still listed until every node is verified: the reconciler retries the stop there.
        book.placedById.set(p.id, {
          ...p,
          state: 'lost',
          reason: `not verified stopped: ${why}; retried when it answers`,
        })
        book.intents.addStop({
          id: p.id,
          nodes: left.map((l) => l.node),
          served: p.served,
          error: why,
          since: book.deps.clock.now(),
        })
        book.save()
        throw new Error(`${p.id} is not verified stopped (${why}); Tandem retries the stop when it answers`)
      }
      this.phase(job, s, 'ready', `${s.id} stopped (verified on ${p?.nodes.join(', ') ?? s.id})`)
      book.noteJob(s, { state: 'succeeded', error: null })
      s.settle('down')
      return { stopped: s.id }
    } catch (err) {
      s.settle('unchanged')
      this.phase(job, s, 'failed', `stopping ${s.id} failed: ${errorText(err)}`)
      book.noteJob(s, { state: 'failed', error: errorText(err) })
      throw err
    } finally {
      this.book.changing = null
      this.changed()
    }
  }

  /**
   * Stops every placement the job displaces (best effort: a launcher that cannot stop — nothing
   * ran, autodetection failed — must not block the launch; a container still up shows in the
   * launch and load that follow). With nothing displaced on the head, its stop clears a stray engine.
   */
  private async stopDisplaced(job: JobControl, s: InFlight): Promise<void> {
    const { book } = this
    // The phase only when a placement stops: clearing a stray engine off a free head is no stop of a model.
    if (s.displaces.length > 0) this.phase(job, s, 'stopping')
    const stops = s.displaces.map((d) => d.on)
    if (!s.displaces.some((d) => d.placement.head === s.nodes[0]) && s.action === 'place') {
      job.log(`clearing any stray engine on ${s.nodes[0] ?? s.id}`)
      stops.push(s.on)
    }
    for (const on of stops) {
      const code = await this.onHead(job, on, (l) => stopCommand(book.deps.config, on, l), STOP_TIMEOUT_MS, null)
      if (code !== 0) job.log(`the launcher's stop on ${on.nodes[0]} exited with status ${code ?? 'unknown'}; going on`)
    }
    for (const d of s.displaces) {
      book.placedById.delete(d.placement.id)
      const base = book.deps.engineUrl(d.placement.head)
      if (base !== null) book.watch.record(base, null)
    }
    book.save()
    this.changed()
  }

  /** Launches a plan on its head and waits until the served model answers there. */
  private async bringUp(
    job: JobControl,
    s: InFlight,
    on: PlacementNodes,
    plan: LaunchPlan,
    step: (p: Phase) => void,
  ): Promise<void> {
    const { book } = this
    step('launching')
    s.launchedAt = book.deps.clock.now()
    await this.onHead(job, on, () => plan.launchCmd, LAUNCH_TIMEOUT_MS, 'the launcher')
    step('loading')
    const site = book.site(on.nodes[0] as NodeName)
    const names = await waitServed(job, site, plan.served, {
      pool: book.deps.pool,
      now: () => book.deps.clock.now(),
      loadTimeoutS: book.deps.config.models.loadTimeoutS,
      pollMs: book.deps.pollMs ?? 500,
      etaS: () => book.etaS(s),
    })
    // Routed at once, not at the next look.
    if (site.baseUrl !== null) book.watch.record(site.baseUrl, names)
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
    const { deps } = this.book
    const head = on.nodes[0] as NodeName
    const target = deps.targetOf(head)
    if (target === null) throw new Error(`${head} is not configured`)
    const launcher = await deps.launcherOn(head)
    const r = await deps.pool.exec(target, command(launcher), {
      timeoutMs,
      signal: cancellable ? job.signal : undefined,
      onLine: (line) => job.log(line),
    })
    if (r.code !== 0 && what !== null) throw new Error(`${what} exited with status ${r.code ?? r.signal ?? 'unknown'}`)
    return r.code
  }

  /** After a failed placement: keeps the failed model's log, stops it, relaunches only what it displaced. */
  private async recover(job: JobControl, s: InFlight, err: unknown): Promise<{ outcome: Outcome; message: string }> {
    const { deps } = this.book
    if (err instanceof LoadFailed && err.lines.length > 0) {
      job.log(`— last log lines of ${s.entry?.def.name ?? s.id}:`)
      for (const l of err.lines.slice(-KEEP_FAILED_LINES)) job.log(l)
    }
    const failed = `${failedText(s)}: ${errorText(err)}`
    // Whatever follows, the failed engine goes (a cancelled job too: its timeout still bounds the
    // stop): a container still loading would hold nodes shown free.
    const stop = (l: LauncherInfo): string => stopCommand(deps.config, s.on, l)
    await this.onHead(job, s.on, stop, STOP_TIMEOUT_MS, null, false).catch(() => null)
    if (s.displaces.length === 0)
      return { outcome: 'down', message: `${failed}; no model was loaded before, nothing to roll back to` }
    if (job.signal.aborted) return { outcome: 'down', message: `${failed}; cancelled, no rollback` }
    if (!deps.config.models.rollback)
      return { outcome: 'down', message: `${failed}; rollback is off (SWAP_ROLLBACK), the llm is left stopped` }
    this.phase(job, s, 'rolling_back', `relaunching ${s.displaces.map((d) => d.placement.served).join(', ')}`)
    const results: string[] = []
    let all = true
    for (const d of s.displaces) {
      const r = await this.relaunch(job, s, d.placement, d.on)
      results.push(r.message)
      all &&= r.ok
    }
    this.book.save()
    return { outcome: all ? 'rolled_back' : 'down', message: `${failed}; ${results.join('; ')}` }
  }

  private async relaunch(
    job: JobControl,
    s: InFlight,
    prev: Placement,
    on: PlacementNodes,
  ): Promise<{ ok: boolean; message: string }> {
    const { deps } = this.book
    const back = prev.key === null ? undefined : deps.catalog.list().find((e) => e.def.key === prev.key)
    if (back === undefined) return { ok: false, message: `${prev.served} is not in the catalog, no rollback` }
    try {
      const plan = launchPlan(deps.config, back, on, await deps.launcherOn(on.nodes[0] as NodeName))
      await this.bringUp(job, s, on, plan, (p) => job.log(`— ${SWAP_PHASE_TITLES[p].toLowerCase()} (${prev.id})`))
      this.book.placedById.set(prev.id, this.record(prev.id, back.def.key, plan, on.nodes))
      return { ok: true, message: `rolled back to ${back.def.name}` }
    } catch (rbErr) {
      return { ok: false, message: `the rollback to ${back.def.name} failed too: ${errorText(rbErr)}` }
    }
  }

  /**
   * The operator saw the placement fail: its intent goes, and each displaced placement that is back
   * (rolled back, or never stopped) keeps its own. A recovery keeps its intent for the next attempt.
   */
  private forgetFailed(s: InFlight): void {
    if (s.origin === 'recovery') return
    const { intents, placedById } = this.book
    intents.replace([s.id], null)
    for (const i of s.displacedIntents) if (placedById.has(i.id)) intents.put(i)
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
      since: this.book.deps.clock.now(),
      memory_bytes_per_node: null,
    }
  }

  private phase(job: JobControl, s: InFlight, phase: Phase, detail: string | null = null): void {
    s.phase = phase
    job.phase(SWAP_PHASE_TITLES[phase])
    if (phase !== 'ready' && phase !== 'failed') this.book.noteJob(s)
    if (detail !== null) job.log(detail)
    const touched = new Set([...s.nodes, ...s.displaces.flatMap((d) => d.placement.nodes)])
    const step: PlacementStep = {
      key: s.entry?.def.key ?? s.displaces[0]?.placement.key ?? s.id,
      mode: modeOfNodes(s.nodes),
      phase,
      job_id: s.jobId,
      loaded: this.book.loaded(),
      detail,
      placement_id: s.id,
      nodes: [...touched],
      replaces: s.displaces.map((d) => d.placement.id),
    }
    // The alias for outside clients, published for one release beside placements.changed (which carries the step too).
    this.book.deps.events.publish('swap.state', step)
    this.changed(step)
  }
}

function failedText(s: InFlight): string {
  const name = s.entry?.def.name ?? s.id
  return s.spec ? `swap to ${name} failed` : `placing ${name} on ${s.id} failed`
}
