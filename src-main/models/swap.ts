import path from 'node:path'
import { z } from 'zod'
import type { Config } from '../config/load'
import { ApiError, badInput, conflict } from '../contract/errors'
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
import { Layout as LayoutSchema } from '../contract/models'
import type { NodeName } from '../contract/schemas'
import type { Clock } from '../lib/clock'
import type { EventPublisher } from '../platform/eventBus'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import { httpCall } from '../lib/httpClient'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../jobs/registry'
import type { SshPool, SshTarget } from '../ssh/pool'
import { containerTailCommand, launchPlan, LaunchRefused, servedName, stopCommand, type LaunchPlan } from './launch'
import type { CatalogEntry, CatalogReader, SwapStatus } from './types'

type Loaded = z.infer<typeof LoadedModel>
type Phase = z.infer<typeof SwapPhase>

/** How a swap ended, as the requests held at the gateway need to know it. */
type Outcome = 'ready' | 'unchanged' | 'rolled_back' | 'down'

/** Lines in the llm container's log that mean the engine will not come up. */
const FATAL =
  /Engine core initialization failed|EngineCore failed to start|OutOfMemoryError|CUDA out of memory|CUDA error|cudaErrorUnknown|Traceback \(most recent call last\)/

const LAUNCH_TIMEOUT_MS = 10 * 60_000
const STOP_TIMEOUT_MS = 3 * 60_000
const PROBE_MS = 5_000
/** The look at the llm while the daemon starts. */
const START_PROBE_MS = 2_000
const TAIL_LINES = 60
/** Log lines of a failed model kept with its job. */
const KEEP_FAILED_LINES = 30

const SwapStateFile = z.object({
  /** Milliseconds each model last took from launch to answering. */
  loads: z.record(z.string(), z.number()).default({}),
  last: z
    .object({
      key: z.string().nullable(),
      served: z.string(),
      mode: z.enum(['solo', 'cluster']).nullable(),
      since: z.number().nullable(),
      layout: LayoutSchema.nullable().default(null),
    })
    .nullable()
    .default(null),
})
type SwapStateFile = z.infer<typeof SwapStateFile>

export interface SwapValidator {
  validate(entry: CatalogEntry, mode: RunMode, signal?: AbortSignal): Promise<ValidationResult>
}

export interface SwapDeps {
  readonly config: Config
  readonly clock: Clock
  readonly logger: Logger
  readonly jobs: JobRegistry
  readonly events: EventPublisher
  readonly catalog: CatalogReader
  readonly validator: SwapValidator
  readonly pool: SshPool
  readonly targets: Readonly<Record<NodeName, SshTarget | null>>
  /** The llm's origin, or null when node1 is not configured. */
  readonly llmBaseUrl: () => string | null
  readonly estimate: (key: string, mode: RunMode) => Promise<FitEstimate>
  /** The launcher on node1 as last read: commands are built for its generation. */
  readonly launcher: () => Promise<LauncherInfo>
  /** Pause between looks at a loading model (ms). */
  readonly pollMs?: number
}

interface InFlight {
  readonly key: string
  readonly mode: RunMode
  readonly plan: LaunchPlan
  readonly launcher: LauncherInfo
  readonly jobId: string
  phase: Phase
  /** When the launch began, and how long the model took last time (ms), for the ETA. */
  launchedAt: number | null
  readonly expectedMs: number | null
  readonly outcome: Promise<Outcome>
  settle(o: Outcome): void
}

/** Raised while loading: what went wrong and the container's last log lines. */
class LoadFailed extends Error {
  constructor(
    message: string,
    readonly lines: readonly string[],
  ) {
    super(message)
  }
}

/**
 * The model swap (spec 1, 4.2; DESIGN.md, The launcher): a job through validating, stopping the
 * current engine, launching, loading and ready (or failed, with the previous model relaunched).
 * It also tells the gateway when chat requests must wait for a swap (and starts one on demand).
 */
export class SwapManager implements SwapStatus {
  private current: Loaded | null = null
  private holding = 0
  private swapping: InFlight | null = null
  private learned: Promise<void> = Promise.resolve()
  private readonly stateFile: string
  private state: SwapStateFile = { loads: {}, last: null }

  constructor(private readonly deps: SwapDeps) {
    this.stateFile = path.join(deps.config.paths.dataDir, 'swap-state.json')
    const read = readStateFile(this.stateFile, (t) => SwapStateFile.parse(JSON.parse(t)))
    if (read.kind === 'ok') this.state = read.value
    else if (read.kind === 'corrupt')
      deps.logger.warn(replacedStateFileMessage('swap state file', this.stateFile, read, 'starting a fresh one'))
    // A catalog change can name the served model (a custom entry added for it).
    deps.catalog.onChange(() => {
      if (this.current !== null && this.current.key === null)
        this.current = { ...this.current, key: this.entryServing(this.current.served)?.def.key ?? null }
    })
  }

  loaded(): Loaded | null {
    return this.current
  }

  busy(): boolean {
    return this.swapping !== null
  }

  /** Requests waiting at the gateway for the swap in progress. */
  get held(): number {
    return this.holding
  }

  /** Learns what the llm serves now (a short probe, so a dead llm host delays the start by little). */
  async start(): Promise<void> {
    this.learned = this.learn().catch((err: unknown) =>
      this.deps.logger.warn('could not learn the loaded model', { error: err }),
    )
    await this.learned
  }

  async stop(): Promise<void> {
    await this.learned
  }

  /** Resolves once the loaded model is known (tests, and the first GET /api/swap). */
  ready(): Promise<void> {
    return this.learned
  }

  async view(): Promise<SwapView> {
    await this.learned
    const s = this.swapping
    const job = s ? this.deps.jobs.get(s.jobId) : (this.deps.jobs.list('swap')[0] ?? null)
    return {
      loaded: this.current,
      job,
      swapping: s ? { key: s.key, mode: s.mode, phase: s.phase, eta_s: this.etaS(s), layout: s.plan.layout } : null,
    }
  }

  /** Starts a swap job: 409 while a download or another swap runs, or when the model does not fit unconfirmed. */
  async begin(key: string, requested?: RunMode, confirmNoFit = false): Promise<{ job_id: string }> {
    await this.learned
    const entry = this.deps.catalog.get(key)
    const mode = this.modeFor(entry, requested)
    const running = (kind: 'download' | 'swap') => this.deps.jobs.list(kind).find((j) => j.state === 'running')
    const download = running('download')
    if (download) throw conflict(`a download is running (${download.id}: ${download.title}); swap when it has finished`)
    const swap = running('swap')
    if (swap) throw conflict(`a swap job is already running (${swap.id}: ${swap.title})`)
    if (mode === 'cluster' && this.deps.targets.node2 === null)
      throw conflict(`${entry.def.name} in cluster mode needs node2: set NODE2_HOST and NODE2_USER`)
    // What the installed launcher cannot launch is refused here, before anything is stopped.
    const launcher = await this.deps.launcher()
    let plan: LaunchPlan
    try {
      plan = launchPlan(this.deps.config, entry, mode, launcher)
    } catch (err) {
      if (err instanceof LaunchRefused) throw conflict(`${entry.def.name} cannot be launched ${mode}: ${err.message}`)
      throw badInput(`${entry.def.name} cannot be launched: ${(err as Error).message}`)
    }
    if (!confirmNoFit) await this.refuseNoFit(entry, mode)
    const title = `Swap to ${entry.def.name} (${layoutLabel(plan.layout)})`
    let settle!: (o: Outcome) => void
    const outcome = new Promise<Outcome>((r) => (settle = r))
    const record = this.deps.jobs.start('swap', title, (job) => this.run(job, entry, mode))
    const last = this.state.loads[key]
    this.swapping = {
      key,
      mode,
      plan,
      launcher,
      jobId: record.id,
      phase: 'validating',
      launchedAt: null,
      expectedMs: last ?? null,
      outcome,
      settle,
    }
    return { job_id: record.id }
  }

  /** True when `admit` would return at once: nothing loading, and no swap on demand to start for `model`. */
  isOpen(model: string | null): boolean {
    if (this.swapping !== null) return false
    if (!this.deps.config.models.onDemand || model === null) return true
    return this.current !== null && (this.current.served === model || this.current.key === model)
  }

  /**
   * The gateway's hold (spec: chat and completions wait while a swap loads): resolves when the
   * request may go on, throws 503 with Retry-After past SWAP_HOLD_S or when the swap left no
   * model loaded, and rejects with the signal's reason when the client goes away.
   */
  async admit(model: string | null, signal: AbortSignal): Promise<void> {
    if (this.deps.config.models.onDemand && model !== null && this.swapping === null) await this.onDemand(model)
    const s = this.swapping
    if (s === null) return
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
        throw swapUnavailable(
          `a model swap is in progress (${s.key}, ${SWAP_PHASE_TITLES[s.phase].toLowerCase()}); retry later`,
          eta !== null && eta > 0 ? eta : 30,
        )
      }
      if (result === 'down')
        throw swapUnavailable(`the swap to ${s.key} failed and no model is loaded (the rollback failed too)`, 60)
    } finally {
      this.holding -= 1
      clearTimeout(timer)
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }

  private async onDemand(model: string): Promise<void> {
    if (this.current !== null && (this.current.served === model || this.current.key === model)) return
    const entry = this.deps.catalog.list().find((e) => e.def.key === model || servedName(e) === model)
    if (!entry) return
    try {
      const { job_id } = await this.begin(entry.def.key)
      this.deps.logger.info('swap on demand', { model: entry.def.key, job: job_id })
    } catch (err) {
      // Another request started it meanwhile, or it cannot start: the request goes on as it is.
      this.deps.logger.info('no swap on demand', { model: entry.def.key, reason: (err as Error).message })
    }
  }

  private modeFor(entry: CatalogEntry, requested: RunMode | undefined): RunMode {
    const declared = entry.def.mode
    if (requested === undefined) return declared === 'cluster' ? 'cluster' : 'solo'
    if (declared !== 'both' && requested !== declared)
      throw badInput(`${entry.def.key} runs in ${declared} mode only, not ${requested}`)
    return requested
  }

  private async refuseNoFit(entry: CatalogEntry, mode: RunMode): Promise<void> {
    let fit: FitEstimate
    try {
      fit = await this.deps.estimate(entry.def.key, mode)
    } catch (err) {
      this.deps.logger.warn('fit estimate failed before a swap', { model: entry.def.key, error: err })
      return
    }
    if (fit.verdict !== 'no_fit') return
    const gb = (b: number | null) => (b === null ? '?' : `${(b / 1e9).toFixed(1)} GB`)
    const numbers = fit.nodes
      .filter((n) => n.verdict === 'no_fit')
      .map((n) => `${n.node} needs ${gb(n.need_bytes)} of a ${gb(n.budget_bytes)} budget`)
      .join(', ')
    throw conflict(
      `${entry.def.name} does not fit in ${mode} mode (${numbers}); send confirm_no_fit: true to swap anyway`,
    )
  }

  private async run(job: JobControl, entry: CatalogEntry, mode: RunMode): Promise<{ loaded: Loaded }> {
    const s = this.swapping as InFlight
    const prev = this.current
    let stopped = false
    try {
      this.phase(job, s, 'validating')
      const plan = s.plan
      job.log(`layout: ${layoutLabel(plan.layout)}; ${s.launcher.generation} launcher, image ${plan.image}`)
      job.log(`$ ${plan.cmdArgs.join(' ')}`)
      const v = await this.deps.validator.validate(entry, mode, job.signal)
      // A throwaway container of the model's own image answers: its no is definitive.
      if (!v.ok) throw new Error(`validation failed (${v.stage}): ${v.error ?? ''}`)
      job.log(`arguments accepted by ${v.parser ?? "vLLM's parser"}`)
      stopped = true
      await this.bringUp(job, s, plan, mode, prev?.mode ?? null, false)
      const loaded: Loaded = {
        key: entry.def.key,
        served: plan.served,
        mode,
        since: this.deps.clock.now(),
        layout: plan.layout,
      }
      this.remember(entry.def.key, s, loaded)
      this.current = loaded
      this.phase(job, s, 'ready', `${entry.def.name} answers`)
      s.settle('ready')
      return { loaded }
    } catch (err) {
      const outcome = stopped
        ? await this.recover(job, s, entry, err, prev)
        : {
            outcome: 'unchanged' as const,
            message: `swap to ${entry.def.name} failed: ${errorText(err)}; nothing was stopped`,
          }
      s.settle(outcome.outcome)
      this.phase(job, s, 'failed', outcome.message)
      throw new Error(outcome.message, { cause: err })
    } finally {
      this.swapping = null
    }
  }

  /** Stops the engine, launches the plan and waits until the served model answers. */
  private async bringUp(
    job: JobControl,
    s: InFlight,
    plan: LaunchPlan,
    mode: RunMode,
    runningMode: RunMode | null,
    rollingBack: boolean,
  ): Promise<void> {
    const step = (p: Phase): void =>
      rollingBack ? job.log(`— ${SWAP_PHASE_TITLES[p].toLowerCase()}`) : this.phase(job, s, p)
    step('stopping')
    const stopMode = runningMode ?? (this.deps.targets.node2 ? 'cluster' : 'solo')
    // Best effort: a launcher that cannot stop (nothing ran, autodetection failed) must not block
    // the launch; a container still up would show in the launch and load that follow.
    const stopped = await this.node1(job, stopCommand(this.deps.config, stopMode, s.launcher), STOP_TIMEOUT_MS, null)
    if (stopped !== 0) job.log(`the launcher's stop exited with status ${stopped ?? 'unknown'}; launching anyway`)
    this.current = null
    step('launching')
    s.launchedAt = this.deps.clock.now()
    await this.node1(job, plan.launchCmd, LAUNCH_TIMEOUT_MS, 'the launcher')
    step('loading')
    await this.waitServed(job, s, plan.served)
  }

  /** Runs a command on node1 with its output in the job log; a non-zero exit fails the step named `what` (null: the caller decides). */
  private async node1(
    job: JobControl,
    command: string,
    timeoutMs: number,
    what: string | null,
  ): Promise<number | null> {
    const target = this.deps.targets.node1
    if (target === null) throw new Error('node1 is not configured: set NODE1_HOST and NODE1_USER')
    const r = await this.deps.pool.exec(target, command, {
      timeoutMs,
      signal: job.signal,
      onLine: (line) => job.log(line),
    })
    if (r.code !== 0 && what !== null) throw new Error(`${what} exited with status ${r.code ?? r.signal ?? 'unknown'}`)
    return r.code
  }

  /** Polls the llm's /v1/models until it names `served`; the container log goes to the job meanwhile. */
  private async waitServed(job: JobControl, s: InFlight, served: string): Promise<void> {
    const { config, clock } = this.deps
    const deadline = clock.now() + config.models.loadTimeoutS * 1000
    const tail = new LogTail()
    for (;;) {
      if (job.signal.aborted) throw job.signal.reason
      const names = await this.servedNow()
      if (names?.includes(served)) return
      const look = await this.containerTail()
      for (const line of tail.fresh(look.lines)) job.log(line)
      const fatal = look.lines.find((l) => FATAL.test(l))
      if (fatal !== undefined) throw new LoadFailed(`the engine failed to load ${served}: ${fatal.trim()}`, look.lines)
      if (look.running === false)
        throw new LoadFailed(`the llm container stopped while ${served} was loading`, look.lines)
      if (clock.now() > deadline)
        throw new LoadFailed(`${served} did not answer within ${config.models.loadTimeoutS} s`, look.lines)
      const eta = this.etaS(s)
      if (eta !== null) job.progress({ eta_s: eta })
      await pause(this.deps.pollMs ?? 500, job.signal)
    }
  }

  /** After a failed swap: keeps the failed model's log, relaunches the previous model when allowed. */
  private async recover(
    job: JobControl,
    s: InFlight,
    entry: CatalogEntry,
    err: unknown,
    prev: Loaded | null,
  ): Promise<{ outcome: Outcome; message: string }> {
    const reason = errorText(err)
    if (err instanceof LoadFailed && err.lines.length > 0) {
      job.log(`— last log lines of ${entry.def.name}:`)
      for (const l of err.lines.slice(-KEEP_FAILED_LINES)) job.log(l)
    }
    const failed = `swap to ${entry.def.name} failed: ${reason}`
    if (prev === null)
      return { outcome: 'down', message: `${failed}; no model was loaded before, nothing to roll back to` }
    if (job.signal.aborted) return { outcome: 'down', message: `${failed}; cancelled, no rollback` }
    if (!this.deps.config.models.rollback)
      return { outcome: 'down', message: `${failed}; rollback is off (SWAP_ROLLBACK), the llm is left stopped` }
    const back = prev.key === null ? undefined : this.deps.catalog.list().find((e) => e.def.key === prev.key)
    if (back === undefined)
      return { outcome: 'down', message: `${failed}; the previous model is not in the catalog, no rollback` }
    this.phase(job, s, 'rolling_back', `relaunching ${back.def.name}`)
    const mode = prev.mode ?? (back.def.mode === 'cluster' ? 'cluster' : 'solo')
    try {
      const plan = launchPlan(this.deps.config, back, mode, s.launcher)
      await this.bringUp(job, s, plan, mode, s.mode, true)
      this.current = {
        key: back.def.key,
        served: plan.served,
        mode,
        since: this.deps.clock.now(),
        layout: plan.layout,
      }
      this.saveState()
      return { outcome: 'rolled_back', message: `${failed}; rolled back to ${back.def.name}` }
    } catch (rbErr) {
      const why = errorText(rbErr)
      return { outcome: 'down', message: `${failed}; the rollback to ${back.def.name} failed too: ${why}` }
    }
  }

  private phase(job: JobControl, s: InFlight, phase: Phase, detail: string | null = null): void {
    s.phase = phase
    job.phase(SWAP_PHASE_TITLES[phase])
    if (detail !== null) job.log(detail)
    this.deps.events.publish('swap.state', {
      key: s.key,
      mode: s.mode,
      phase,
      job_id: s.jobId,
      loaded: this.current,
      detail,
    })
  }

  private etaS(s: InFlight): number | null {
    if (s.expectedMs === null) return null
    const since = s.launchedAt ?? this.deps.clock.now()
    return Math.max(0, Math.round((s.expectedMs - (this.deps.clock.now() - since)) / 1000))
  }

  /** Remembers how long the model took to load (the next swap's ETA) and what is loaded. */
  private remember(key: string, s: InFlight, loaded: Loaded): void {
    if (s.launchedAt !== null) this.state.loads[key] = this.deps.clock.now() - s.launchedAt
    this.state.last = loaded
    this.saveState(loaded)
  }

  private saveState(loaded: Loaded | null = this.current): void {
    this.state.last = loaded
    try {
      atomicWriteFile(this.stateFile, JSON.stringify(this.state, null, 2) + '\n', { role: 'model swap state' })
    } catch (err) {
      this.deps.logger.warn('could not save the swap state', { error: err })
    }
  }

  private entryServing(served: string): CatalogEntry | undefined {
    return this.deps.catalog.list().find((e) => servedName(e) === served)
  }

  /** What the llm serves now (its /v1/models ids), or null when it does not answer. */
  private async servedNow(timeoutMs = PROBE_MS): Promise<string[] | null> {
    const base = this.deps.llmBaseUrl()
    if (base === null) return null
    try {
      const res = await httpCall(`${base}/v1/models`, { signal: AbortSignal.timeout(timeoutMs) })
      if (!res.ok) {
        res.discard()
        return null
      }
      const body = (await res.json()) as { data?: { id?: unknown }[] }
      return (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string')
    } catch {
      return null
    }
  }

  /** Whether the llm container runs (null: node1 could not be asked) and its last log lines. */
  private async containerTail(): Promise<{ running: boolean | null; lines: string[] }> {
    const target = this.deps.targets.node1
    if (target === null) return { running: null, lines: [] }
    try {
      const r = await this.deps.pool.exec(target, containerTailCommand(this.deps.config.llm.container, TAIL_LINES), {
        timeoutMs: PROBE_MS * 2,
      })
      const [state, ...lines] = r.stdout.split('\n')
      return { running: state === 'true', lines: lines.filter((l) => l !== '') }
    } catch {
      return { running: null, lines: [] }
    }
  }

  /** At start: the model the llm answers with, matched to the catalog; the mode and since from the last swap. */
  private async learn(): Promise<void> {
    const names = await this.servedNow(START_PROBE_MS)
    const served = names?.[0]
    if (served === undefined) {
      // Not awaited: a model may be loading (the daemon restarted mid-swap); the log says what runs.
      void this.containerTail().then((look) =>
        this.deps.logger.info('no model answers on the llm', { container_running: look.running }),
      )
      return
    }
    const last = this.state.last
    const same = last !== null && last.served === served
    this.current = {
      key: this.entryServing(served)?.def.key ?? (same ? last.key : null),
      served,
      mode: same ? last.mode : null,
      since: same ? last.since : null,
      layout: same ? last.layout : null,
    }
  }
}

/** `solo on node1` or `cluster on node1+node2, tensor parallel 2`: what a job title and log say. */
export function layoutLabel(layout: Layout): string {
  if (layout.mode === 'solo') return 'solo on node1'
  return `cluster on ${layout.nodes.join('+')}, tensor parallel ${layout.tensor_parallel}`
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** 503 with Retry-After, in the words a client shows: a swap is in progress. */
function swapUnavailable(message: string, retryAfterS: number): ApiError {
  return new ApiError('swap_in_progress', message, {
    status: 503,
    headers: { 'Retry-After': String(Math.max(1, Math.round(retryAfterS))) },
  })
}

/** Which lines of a container log tail are new since the last look (tails overlap). */
class LogTail {
  private seen: string[] = []

  fresh(lines: readonly string[]): string[] {
    const last = this.seen[this.seen.length - 1]
    let from = 0
    if (last !== undefined) {
      const at = lines.lastIndexOf(last)
      from = at === -1 ? 0 : at + 1
    }
    this.seen = [...lines]
    return lines.slice(from)
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms)
    function done(): void {
      clearTimeout(t)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}
