import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig, nodeNames, type Config } from '../../src-main/config/load'
import type { FitEstimate, ModelDef, PlacementKeep, ValidationResult } from '../../src-main/contract/models'
import { HardwareSnapshot, type NodeHardware } from '../../src-main/contract/nodes'
import type { NodeName } from '../../src-main/contract/schemas'
import type { EventName, EventPayload } from '../../src-main/contract/events'
import { JobRegistry } from '../../src-main/platform/jobs'
import { systemClock, type Clock } from '../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../src-main/lib/logger'
import { servedName } from '../../src-main/models/launch'
import { parseProbe } from '../../src-main/models/launcherCapabilities'
import { PlacementManager } from '../../src-main/models/placements'
import type { CatalogEntry, CatalogReader } from '../../src-main/models/types'
import type { ExecOptions, ExecResult, SshPool, SshTarget } from '../../src-main/ssh/pool'
import { LoopbackServer } from '../fakes/loopback'

/**
 * A PlacementManager over fakes (docs/placements.md): a recording SSH pool that plays the launcher
 * and the llm container, one loopback engine per node answering /v1/models with what the test
 * lets it serve, and a hardware snapshot the test sets. Nothing leaves 127.0.0.1.
 */

/** The mid-2026 launcher as the probe reads it (test/fixtures/launcher). */
const MID_PROBE = path.join(__dirname, '../fixtures/launcher/probe-mid-2026.txt')

export const GB = 1e9

function entry(key: string, name: string, repo: string, launchArgs: string[] = []): CatalogEntry {
  return {
    def: { key, name, repo, engine_args: launchArgs, mode: 'both' } as ModelDef,
    tags: ['custom'],
    bundled: false,
    effectiveKnobs: {},
    launchArgs,
  }
}

/** The rig's catalog: served names are the repos, except `tiny`, which serves as `coder`. */
export const ENTRIES: readonly CatalogEntry[] = [
  entry('big', 'Big', 'org/big'),
  entry('coder', 'Coder', 'org/coder'),
  entry('bad', 'Bad', 'org/bad'),
  entry('tiny', 'Tiny', 'org/tiny', ['--served-model-name', 'coder']),
]

/** What the fake container log shows when the engine will not come up. */
export const FATAL_LINE = 'ERROR [core.py:123] EngineCore failed to start.'

const OK_VALIDATION: ValidationResult = {
  ok: true,
  stage: 'done',
  error: null,
  cmd_args: [],
  launch_cmd: '',
  parser: 'fake parser',
}

export interface RecordedCommand {
  readonly node: NodeName
  readonly host: string
  readonly command: string
  readonly kind: 'launch' | 'stop' | 'tail' | 'other'
}

/** One node's engine: its /v1/models lists `served` and its `aliases` (nothing when served is null). */
export class FakeEngine {
  served: string | null = null
  /** More ids it lists (a Tandem launch adds the catalog key; a LoRA adapter, an alias). */
  aliases: string[] = []
  /** Container log lines the tail command answers with. */
  tail: string[] = ['INFO loading']
  /** Whether its container runs (null: whenever it serves, as an engine started by hand). */
  container: boolean | null = null

  get running(): boolean {
    return this.container ?? this.served !== null
  }
  private pending: NodeJS.Timeout | undefined
  readonly server = new LoopbackServer(() =>
    this.served === null
      ? { status: 503, body: { error: 'not ready' } }
      : {
          status: 200,
          body: { object: 'list', data: [this.served, ...this.aliases].map((id) => ({ id, object: 'model' })) },
        },
  )

  /** Starts serving `served` after `delayMs` (0: at once), as an engine that finished loading. */
  serveAfter(served: string, delayMs: number): void {
    clearTimeout(this.pending)
    if (delayMs <= 0) this.served = served
    else this.pending = setTimeout(() => (this.served = served), delayMs)
  }

  down(): void {
    clearTimeout(this.pending)
    this.served = null
  }
}

/** A push event as the placements published it. */
export type PublishedEvent = { [K in EventName]: { name: K; data: EventPayload<K> } }[EventName]

export interface RigOptions {
  /** Nodes past node2 (NODES); default 2 (node3, node4). */
  readonly extraNodes?: number
  readonly env?: Record<string, string>
  /** Reuse a data directory (a restart). */
  readonly dataDir?: string
  /** Reuse engines (a restart: the models kept running); the rig adds the missing ones and stops only those. */
  readonly engines?: Record<string, FakeEngine>
  readonly loadDelayMs?: number
  readonly pollMs?: number
  /** Pause between the manager's looks at every engine (ms; the daemon's 3 s when absent). */
  readonly watchMs?: number
  /** The manager's clock (the system clock when absent). */
  readonly clock?: Clock
  /** Pause between reconciler rounds (ms; the daemon's when absent). */
  readonly reconcileMs?: number
  /** The gateway's in-flight check (idle unloading). */
  readonly isBusy?: (placementId: string) => boolean
  /** A catalog entry's own keep (pinned or an idle ttl), by key. */
  readonly catalogKeep?: Readonly<Record<string, PlacementKeep>>
  /** How long a published view waits for the hardware read (ms; the daemon's when absent). */
  readonly viewWaitMs?: number
}

export type Rig = Awaited<ReturnType<typeof placementRig>>

/** A GPU process of a hardware row: its title (`VLLM::EngineCore` for an engine) and memory. */
export interface GpuUse {
  readonly name: string
  readonly bytes: number
}

/** A hardware row of a reachable node: its cluster-link address and the GPU processes holding memory. */
export function okRow(node: NodeName, clusterIp: string | null, uses: readonly GpuUse[] = []): NodeHardware {
  const usedBytes = uses.reduce((sum, u) => sum + u.bytes, 0)
  return {
    node,
    status: 'ok',
    host: hostOf(node),
    hostname: `spark-${node}`,
    uptime_s: 100,
    load: [0, 0, 0],
    cores: 20,
    ram: { total_bytes: 128 * GB, used_bytes: 10 * GB, available_bytes: 118 * GB },
    disk: null,
    gpu: {
      name: 'NVIDIA GB10',
      utilization_pct: 0,
      temperature_c: 40,
      power_w: 10,
      memory_used_bytes: usedBytes,
      memory_total_bytes: 128 * GB,
      memory_fraction: usedBytes / (128 * GB),
      processes: uses.map((u, i) => ({ pid: 1000 + i, name: u.name, used_bytes: u.bytes })),
    },
    gpu_unified_memory: true,
    memory_pool: null,
    interface: 'enP7s7',
    mac: null,
    cluster_ip: clusterIp,
    probed_at: 0,
    probe_ms: 5,
  }
}

export function downRow(node: NodeName): NodeHardware {
  return {
    node,
    status: 'unreachable',
    host: hostOf(node),
    error: 'connect ETIMEDOUT',
    error_kind: 'timeout',
    port: 22,
    mac: null,
    probed_at: 0,
  }
}

/** Each node's SSH host: loopback addresses, never dialled (the pool is a fake). */
function hostOf(node: string): string {
  return `127.0.0.${node.slice(4)}`
}

/** Each node's cluster-link address in the default snapshot. */
export function clusterIpOf(node: string): string {
  return `10.1.0.${node.slice(4)}`
}

function kindOf(command: string): RecordedCommand['kind'] {
  if (command.startsWith('docker inspect')) return 'tail'
  if (!command.includes('launch-cluster.sh')) return 'other'
  return command.endsWith("'stop'") ? 'stop' : 'launch'
}

/** The entry a launch command serves (`'vllm' 'serve' '<repo>'`). */
function launchedEntry(command: string): CatalogEntry | undefined {
  return ENTRIES.find((e) => command.includes(`'vllm' 'serve' '${e.def.repo ?? ''}'`))
}

export async function placementRig(opts: RigOptions = {}) {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-placements-'))
  const extra = Array.from({ length: opts.extraNodes ?? 2 }, (_, i) => `spark@${hostOf(`node${i + 3}`)}`)
  const config: Config = loadConfig({
    env: {
      DATA_DIR: dataDir,
      NODE1_HOST: hostOf('node1'),
      NODE1_USER: 'spark',
      NODE2_HOST: hostOf('node2'),
      NODE2_USER: 'spark',
      ...(extra.length > 0 ? { NODES: extra.join(',') } : {}),
      ...opts.env,
    },
  })
  const names = nodeNames(config) as NodeName[]
  const engines: Record<string, FakeEngine> = opts.engines ?? {}
  const own: FakeEngine[] = []
  for (const n of names)
    if (engines[n] === undefined) {
      const e = new FakeEngine()
      await e.server.start()
      engines[n] = e
      own.push(e)
    }
  const hw: Record<string, NodeHardware> = {}
  for (const n of names) hw[n] = okRow(n, clusterIpOf(n))
  const commands: RecordedCommand[] = []
  /** Served names whose launch fails (the container log shows FATAL_LINE). */
  const failing = new Set<string>()
  /** Nodes whose SSH commands fail as an unreachable host's do. */
  const unreachable = new Set<NodeName>()
  /** Called with every command before it is answered (a test looks at the manager mid-job). */
  let onCommand: (c: RecordedCommand) => void = () => undefined
  /** Awaited before every hardware read is answered (a test holds one read back). */
  let beforeHardware: () => Promise<void> = async () => undefined
  const loadDelayMs = opts.loadDelayMs ?? 0
  let killValidation = false

  const nodeOf = (target: SshTarget): NodeName => {
    const found = names.find((n) => config.nodes[n]?.host === target.host)
    if (found === undefined) throw new Error(`the fake pool was asked for an unknown host ${target.host}`)
    return found
  }
  /** Set by `kill9`: the command it freezes at, and whether the daemon is dead (nothing more acts). */
  let killAt: ((c: RecordedCommand) => boolean) | null = null
  let dead = false
  const closing = new AbortController()
  /** A dead daemon's command: it never answers (until the job is cancelled or the rig closes). */
  const frozen = (signal: AbortSignal | undefined): Promise<never> =>
    new Promise((_, reject) => {
      for (const sig of [signal, closing.signal]) {
        if (sig?.aborted === true) reject(new Error('killed'))
        sig?.addEventListener('abort', () => reject(new Error('killed')), { once: true })
      }
    })
  const pool: Pick<SshPool, 'exec'> = {
    exec: async (target: SshTarget, command: string, o?: ExecOptions): Promise<ExecResult> => {
      const node = nodeOf(target)
      const rec: RecordedCommand = { node, host: target.host, command, kind: kindOf(command) }
      if (dead) return frozen(o?.signal)
      if (killAt?.(rec) === true) {
        // kill -9 here: this command never runs, and the daemon does nothing more.
        dead = true
        return frozen(o?.signal)
      }
      commands.push(rec)
      onCommand(rec)
      const engine = engines[node] as FakeEngine
      if (unreachable.has(node)) throw new Error(`connect ETIMEDOUT ${target.host}`)
      if (rec.kind === 'tail')
        return { code: 0, signal: null, stdout: `${String(engine.running)}\n${engine.tail.join('\n')}\n`, stderr: '' }
      if (rec.kind === 'stop' || command.startsWith('docker stop')) {
        engine.down()
        engine.container = false
      }
      if (rec.kind === 'launch') {
        const launched = launchedEntry(command)
        if (launched === undefined) throw new Error(`the fake launcher cannot tell what ${command} serves`)
        const served = servedName(launched)
        engine.down()
        engine.container = true
        // As vLLM launched with `--served-model-name <served> <key>` (gatewayEngineArgs) lists them.
        engine.aliases = launched.def.key === served ? [] : [launched.def.key]
        if (failing.has(served)) engine.tail = ['INFO loading', FATAL_LINE]
        else {
          engine.tail = ['INFO loading']
          engine.serveAfter(served, loadDelayMs)
        }
      }
      return { code: 0, signal: null, stdout: '', stderr: '' }
    },
  }
  /** What the reconciler marked on the Cluster view's timeline. */
  const timeline: { subject: string; ok: boolean; source: string; detail: string; error: string | null }[] = []
  /** Every push event the placements published, in order. */
  const published: PublishedEvent[] = []
  const sink = new MemorySink()
  const logger = createLogger({ level: 'info', sink })
  const jobs = new JobRegistry(systemClock, new Redactor())
  const entries = ENTRIES.map((e) => {
    const keep = opts.catalogKeep?.[e.def.key]
    return keep === undefined ? e : { ...e, def: { ...e.def, keep } }
  })
  const catalog: CatalogReader = {
    list: () => [...entries],
    get: (key) => {
      const found = entries.find((e) => e.def.key === key)
      if (found === undefined) throw new Error(`no model ${key}`)
      return found
    },
    onChange: () => undefined,
  }
  const probe = fs.readFileSync(MID_PROBE, 'utf8')
  const deps = {
    estimate: async (_key: string, nodes: readonly NodeName[]): Promise<FitEstimate> => ({
      mode: nodes.length > 1 ? 'cluster' : 'solo',
      verdict: 'fits',
      nodes: [],
      notes: [],
    }),
    headsCheck: async (_key: string, _nodes: readonly NodeName[]): Promise<string | null> => null,
  }

  const manager = (): PlacementManager =>
    new PlacementManager({
      config,
      clock: opts.clock ?? systemClock,
      logger,
      jobs,
      events: { publish: (name, data) => void published.push({ name, data } as PublishedEvent) },
      catalog,
      validator: {
        validate: async (_e: CatalogEntry, _on: unknown, signal?: AbortSignal) => {
          if (killAt !== null && killValidation) {
            dead = true
            return frozen(signal)
          }
          return OK_VALIDATION
        },
      },
      pool,
      nodeNames: () => names,
      targetOf: (node) => config.nodes[node] ?? null,
      engineUrl: (head) => engines[head]?.server.url ?? null,
      estimate: (key, nodes) => deps.estimate(key, nodes),
      headsCheck: (key, nodes) => deps.headsCheck(key, nodes),
      launcherOn: async (node) => parseProbe(probe, '$HOME/spark-vllm-docker', 0, node),
      hardware: async () => {
        await beforeHardware()
        return HardwareSnapshot.parse({ ...hw, taken_at: 0 })
      },
      viewWaitMs: opts.viewWaitMs,
      pollMs: opts.pollMs ?? 5,
      watchMs: opts.watchMs,
      reconcileMs: opts.reconcileMs ?? 3_600_000,
      isBusy: opts.isBusy,
      timeline: (subject, report) => void timeline.push({ subject, ...report }),
    })
  const placements = manager()
  await placements.start()

  return {
    config,
    dataDir,
    names,
    engines,
    hw,
    commands,
    failing,
    unreachable,
    timeline,
    deps,
    jobs,
    sink,
    published,
    placements,
    manager,
    onCommand: (f: (c: RecordedCommand) => void) => (onCommand = f),
    beforeHardware: (f: () => Promise<void>) => (beforeHardware = f),
    /**
     * A kill -9 of this daemon at the first command `at` matches ('validating': inside the
     * validation): that command never acts and nothing after it does; the engines keep what they had.
     */
    kill9(at: ((c: RecordedCommand) => boolean) | 'validating'): void {
      killValidation = at === 'validating'
      killAt = at === 'validating' ? () => false : at
    },
    /** Whether the kill -9 happened. */
    dead: () => dead,
    snapshot: () => HardwareSnapshot.parse({ ...hw, taken_at: 0 }),
    /** Places and waits for the job; throws with the job's error when it did not succeed. */
    async placed(key: string, nodes: NodeName[], o: { displace?: boolean; confirmNoFit?: boolean } = {}) {
      const { job_id, id } = await placements.place(key, nodes, o)
      const job = await jobs.wait(job_id)
      if (job.state !== 'succeeded') throw new Error(`placing ${key} on ${id}: ${job.state} ${job.error ?? ''}`)
      return id
    },
    /** Commands of the kinds named (all but the container tails by default). */
    ran: (kinds: RecordedCommand['kind'][] = ['launch', 'stop', 'other']) =>
      commands.filter((c) => kinds.includes(c.kind)),
    async close(): Promise<void> {
      closing.abort()
      await placements.stop()
      await jobs.stopAll()
      for (const e of own) await e.server.stop()
      if (opts.dataDir === undefined) fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
