import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { LauncherCapability, LauncherInfo } from '../contract/models'
import type { NodeName } from '../contract/schemas'
import type { SshPool, SshTarget } from '../ssh/pool'
import { remoteDir } from '../ssh/quote'

/**
 * What the launcher checkout on node1 is and can do (DESIGN.md, The launcher). Two generations are
 * in the field and a third is coming: the early-2026 scripts have no `--solo`, join their exec words
 * unquoted and stop the cluster after `exec` even with `-d`; the mid-2026 ones accept `--solo` and
 * dispatch a quoted `-d exec`; later ones pick the distributed backend themselves (`--ray`/`--no-ray`).
 * Tandem reads the scripts once per SSH connection (and after an update) and builds commands for
 * what it finds, so it never sends a flag the installed launcher would misread.
 */

const PROBE_TIMEOUT_MS = 15_000
const MARK = '@@launcher'

/**
 * Each capability and the `grep -E` pattern that shows it in launch-cluster.sh: the argument
 * parser's case labels and the lines that make the behaviour (test/fixtures/launcher/README.md).
 */
const SCRIPT_MARKERS: readonly (readonly [LauncherCapability, string])[] = [
  ['solo', '^[[:space:]]*--solo\\)'],
  ['image_flag', '^[[:space:]]*-t\\)'],
  ['name_flag', '^[[:space:]]*--name\\)'],
  ['daemon_exec', 'Command dispatched in background'],
  ['quoted_exec', 'COMMAND_TO_RUN=\\$\\(printf "%q " "\\$@"\\)'],
  ['backend_flag', '^[[:space:]]*--ray\\)'],
  ['extra_docker_args', 'VLLM_SPARK_EXTRA_DOCKER_ARGS'],
  ['apply_mod', '^[[:space:]]*--apply-mod\\)'],
  ['hf_home', 'HF_HOME'],
  ['nodes_flag', '^[[:space:]]*-n\\|--nodes\\)'],
  ['launch_script', '^[[:space:]]*--launch-script\\)'],
  ['no_ray_default', '^NO_RAY_MODE="true"'],
]

/** What each capability's absence costs, in the words the Updates panel and `tandem doctor` show. */
export const MISSING_EFFECT: Readonly<Record<LauncherCapability, string>> = {
  solo: 'no --solo: a model cannot run on node1 alone',
  image_flag: 'no -t: only the default vllm-node image can be launched',
  name_flag: 'no --name: only the default container name vllm_node can be used',
  daemon_exec:
    'exec stops the cluster when the command returns: Tandem starts the cluster with -d start and dispatches vllm serve itself',
  quoted_exec: 'exec joins its words unquoted: Tandem dispatches vllm serve itself so JSON engine args survive',
  backend_flag: 'the launcher does not pick the distributed backend: Tandem adds --distributed-executor-backend ray',
  extra_docker_args: 'no VLLM_SPARK_EXTRA_DOCKER_ARGS: local models cannot be bind-mounted',
  apply_mod: 'no --apply-mod: recipes that need mods cannot have them applied by the launcher',
  hf_home: 'the hub cache is always $HOME/.cache/huggingface, whatever HF_HOME says',
  recipes: 'no recipes/ folder: nothing to import',
  download_script: 'no hf-download.sh: downloads cannot run',
  build_script: 'no build-and-copy.sh: updates cannot rebuild the image',
  nodes_flag: 'no -n: the launcher cannot be told which nodes to run on',
  launch_script: "no --launch-script: a recipe's env cannot reach the engine through the launcher",
  no_ray_default: 'several nodes run over Ray unless --no-ray is given',
  run_recipe:
    "no run-recipe.py (or no PyYAML for it): Tandem builds the recipe's launch script itself, from the recipe as imported",
}

/** The capabilities whose absence is worth showing (the rest Tandem works around silently or never needs). */
const SHOWN_WHEN_MISSING: readonly LauncherCapability[] = [
  'solo',
  'daemon_exec',
  'quoted_exec',
  'extra_docker_args',
  'apply_mod',
  'recipes',
  'download_script',
  'build_script',
  'run_recipe',
]

/** The capabilities read from the checkout's files rather than from launch-cluster.sh. */
const FILE_CAPABILITIES: readonly LauncherCapability[] = ['recipes', 'download_script', 'build_script', 'run_recipe']

/** One SSH command: the checkout's commit, then one `@@launcher cap <name>` line per capability found. */
export function probeCommand(launcherDir: string): string {
  const lines = [
    `cd ${remoteDir(launcherDir)} 2>/dev/null || { echo '${MARK} missing'; exit 0; }`,
    `[ -f launch-cluster.sh ] || { echo '${MARK} missing'; exit 0; }`,
    `echo "${MARK} commit $(git rev-parse HEAD 2>/dev/null)"`,
    `echo "${MARK} date $(git log -1 --format=%cI 2>/dev/null)"`,
    `echo "${MARK} subject $(git log -1 --format=%s 2>/dev/null | head -c 200)"`,
    ...SCRIPT_MARKERS.map(([cap, re]) => `grep -qE '${re}' launch-cluster.sh && echo '${MARK} cap ${cap}'`),
    `[ -d recipes ] && echo '${MARK} cap recipes'`,
    `[ -f hf-download.sh ] && echo '${MARK} cap download_script'`,
    `[ -f build-and-copy.sh ] && echo '${MARK} cap build_script'`,
    `[ -f run-recipe.py ] && python3 -c 'import yaml' 2>/dev/null && echo '${MARK} cap run_recipe'`,
    'true',
  ]
  return lines.join('\n')
}

/**
 * The generation a set of capabilities belongs to: late-2026 picks its own backend, mid-2026
 * dispatches a quoted `-d exec`, anything older stops the cluster after `exec` (early-2026).
 */
export function generationOf(caps: ReadonlySet<LauncherCapability>): LauncherInfo['generation'] {
  if (caps.has('backend_flag')) return 'late-2026'
  if (caps.has('daemon_exec') && caps.has('quoted_exec')) return 'mid-2026'
  return 'early-2026'
}

/** The probe's output as the launcher's description. */
export function parseProbe(stdout: string, dir: string, checkedAt: number, node: NodeName = 'node1'): LauncherInfo {
  const base = { node, dir, checked_at: checkedAt, commit: null, commit_date: null, subject: null }
  const lines = stdout.split('\n').filter((l) => l.startsWith(`${MARK} `))
  if (lines.length === 0 || lines.some((l) => l === `${MARK} missing`))
    return {
      ...base,
      found: false,
      generation: 'unknown',
      capabilities: [],
      missing: [],
      error: `no launcher checkout with a launch-cluster.sh at ${dir} on ${node}: clone the launcher there (LAUNCHER_DIR)`,
    }
  const field = (name: string): string | null => {
    const line = lines.find((l) => l.startsWith(`${MARK} ${name} `))
    const value = line?.slice(MARK.length + name.length + 2).trim() ?? ''
    return value === '' ? null : value
  }
  const found = new Set<LauncherCapability>()
  for (const l of lines) {
    const cap = /^@@launcher cap ([a-z_]+)$/.exec(l)?.[1]
    const known = [...SCRIPT_MARKERS.map(([c]) => c), ...FILE_CAPABILITIES] as string[]
    if (cap !== undefined && known.includes(cap)) found.add(cap as LauncherCapability)
  }
  const commit = field('commit')
  return {
    ...base,
    found: true,
    commit: commit !== null && /^[0-9a-f]{7,64}$/.test(commit) ? commit : null,
    commit_date: field('date'),
    subject: field('subject'),
    generation: generationOf(found),
    capabilities: [...found].sort(),
    missing: SHOWN_WHEN_MISSING.filter((c) => !found.has(c)).map((c) => ({ capability: c, effect: MISSING_EFFECT[c] })),
    error: null,
  }
}

/** How the launcher names itself in a message: its generation and short commit. */
export function launcherLabel(info: LauncherInfo): string {
  const commit = info.commit === null ? 'unknown commit' : `commit ${info.commit.slice(0, 7)}`
  return `the launcher on ${info.node} (${info.generation}, ${commit})`
}

export interface LauncherProbeDeps {
  readonly pool: Pick<SshPool, 'exec' | 'connectionNumber'>
  /** The node whose checkout is read (node1 unless a placement's head is elsewhere). */
  readonly node?: NodeName
  readonly target: SshTarget | null
  readonly launcherDir: string
  readonly clock: Clock
  readonly logger: Logger
}

/** Reads a node's launcher once per SSH connection to it; `refresh` (after an update) reads it again. */
export class LauncherProbe {
  private cached: { connection: number; info: LauncherInfo } | null = null
  private reading: Promise<{ info: LauncherInfo; keep: boolean }> | null = null
  private lastFound: boolean | null = null

  constructor(private readonly deps: LauncherProbeDeps) {}

  /** The launcher as read on the current connection, reading it when this connection has not. */
  async info(refresh = false): Promise<LauncherInfo> {
    const target = this.deps.target
    const node = this.node
    if (target === null) return this.unreadable(`${node} is not configured`)
    const cached = this.cached
    if (!refresh && cached !== null && cached.connection === this.deps.pool.connectionNumber(target)) return cached.info
    this.reading ??= this.read(target).finally(() => (this.reading = null))
    const { info, keep } = await this.reading
    this.lastFound = info.found
    // Keyed on the connection the probe ran on (it may have opened it); a failed read is not kept.
    this.cached = keep ? { connection: this.deps.pool.connectionNumber(target), info } : null
    return info
  }

  /** Whether the checkout was found at the last read on the current connection (null: not read). */
  known(): boolean | null {
    return this.lastFound
  }

  /** Forgets what was read (the checkout changed: an update was applied). */
  invalidate(): void {
    this.cached = null
  }

  private get node(): NodeName {
    return this.deps.node ?? 'node1'
  }

  private async read(target: SshTarget): Promise<{ info: LauncherInfo; keep: boolean }> {
    const dir = this.deps.launcherDir
    try {
      const r = await this.deps.pool.exec(target, probeCommand(dir), { timeoutMs: PROBE_TIMEOUT_MS })
      const info = parseProbe(r.stdout, dir, this.deps.clock.now(), this.node)
      this.deps.logger.info('launcher read', {
        node: this.node,
        generation: info.generation,
        commit: info.commit,
        capabilities: info.capabilities.join(','),
      })
      return { info, keep: info.found }
    } catch (err) {
      return {
        info: this.unreadable(`the launcher on ${this.node} could not be read: ${(err as Error).message}`),
        keep: false,
      }
    }
  }

  private unreadable(error: string): LauncherInfo {
    return {
      node: this.node,
      found: false,
      dir: this.deps.launcherDir,
      commit: null,
      commit_date: null,
      subject: null,
      generation: 'unknown',
      capabilities: [],
      missing: [],
      checked_at: this.deps.clock.now(),
      error,
    }
  }
}
