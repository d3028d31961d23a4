import type { DiskStatus, ModelDef } from '../contract/models'
import { ApiError } from '../contract/errors'
import { ModelRepo, type NodeName } from '../contract/schemas'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobRegistry } from '../platform/jobs'
import type { NodesModule } from '../nodes/module'
import { SshError } from '../ssh/pool'
import { isSafeSegment, shq } from '../ssh/quote'
import { nodeNames } from '../config/load'
import type { CatalogReader, SwapStatus } from './types'

/** One probe command covers every model on a node; du over a large cache can take a while cold. */
const PROBE_TIMEOUT_MS = 20_000
const DELETE_TIMEOUT_MS = 120_000
/** bytesOn answers from the last status probe when it is this fresh (the fit estimate asks often). */
const BYTES_FRESH_MS = 60_000
/** The probe prints one short line per model; anything past this is not ours. */
const MAX_PROBE_OUTPUT = 1_000_000

type DiskEntry = DiskStatus['models'][number]['nodes'][number]

export interface WeightsOnDiskDeps {
  readonly catalog: CatalogReader
  readonly nodes: Pick<NodesModule, 'pool' | 'targets' | 'connectivity'>
  readonly jobs: JobRegistry
  readonly swap: SwapStatus
  readonly logger: Logger
  readonly clock: Clock
}

/**
 * The hub cache root exactly as the launcher's hf-download.sh computes it (and the hub CLI writes to):
 * HF_HOME when the node's shell has it, else `$HOME/.cache/huggingface`. Expanded by the node's shell
 * inside double quotes (spec 2.4 rule 1), so where weights land and where disk status looks agree.
 */
export const HF_HOME_DIR = '${HF_HOME:-$HOME/.cache/huggingface}'
export const HUB_ROOT = `${HF_HOME_DIR}/hub`

/** Where a model's weights live on a node: the hub cache directory, or the local path. */
export interface WeightsLocation {
  /** The shell word for the remote command: `"${HF_HOME:-$HOME…}/hub/…"` (expanded there) or a single-quoted local path. */
  readonly word: string
  /** How the path is shown until the node has resolved the hub root. */
  readonly display: string
  readonly local: boolean
  /** A hub model's directory under the hub root. */
  readonly hubDir?: string
}

/** `org/name` → `models--org--name`; refuses anything that is not a model repo. */
export function hubDirName(repo: string): string {
  // The repo rules (no "..", no "--") keep org--name unambiguous and every segment plain.
  const parts = repo.split('/')
  if (!ModelRepo.safeParse(repo).success || parts.length !== 2)
    throw new ApiError('bad_input', `not a model repo: ${JSON.stringify(repo)}`)
  const dir = `models--${parts[0]}--${parts[1]}`
  // Only [A-Za-z0-9._-]: nothing that is special inside double quotes gets through.
  if (!isSafeSegment(dir)) throw new ApiError('bad_input', `not a model repo: ${JSON.stringify(repo)}`)
  return dir
}

/** `org/name` → the hub cache directory, double-quoted so the node's shell expands it (spec 2.4 rule 1). */
export function hubCacheDir(repo: string): WeightsLocation {
  const dir = hubDirName(repo)
  return { word: `"${HUB_ROOT}/${dir}"`, display: `${HUB_ROOT}/${dir}`, local: false, hubDir: dir }
}

export function weightsLocation(def: ModelDef): WeightsLocation {
  if (def.local_path !== undefined) return { word: shq(def.local_path), display: def.local_path, local: true }
  if (def.repo === undefined) throw new ApiError('bad_input', `model ${def.key} has neither repo nor local_path`)
  return hubCacheDir(def.repo)
}

/** Solo models live on node1; cluster (and either-way) models on both nodes. */
export function nodesFor(def: ModelDef): NodeName[] {
  return def.mode === 'solo' ? ['node1'] : ['node1', 'node2']
}

/**
 * Where disk status looks for a model: the nodes its mode runs on, and every configured node past
 * node2, where a placement or a download may have put it (a two-node install probes as before).
 */
export function probedNodes(def: ModelDef, configured: readonly string[]): NodeName[] {
  const extra = configured.filter((n) => n !== 'node1' && n !== 'node2')
  return [...nodesFor(def), ...extra]
}

/**
 * The probe, POSIX sh without a fork per model: the node's hub root is announced as `H <path>`; each
 * model present on the node (a hub cache with a snapshot, or an existing local directory) is announced
 * as `P <index> <path>` and collected, then one `du` sizes them all (`<bytes>\t<path>`, apparent size).
 * Paths are matched back by name.
 */
export function probeCommand(locations: readonly WeightsLocation[]): string {
  const lines = [`echo "H ${HUB_ROOT}"`, 'set --']
  locations.forEach((loc, i) => {
    const add = `echo "P ${i} $d"; set -- "$@" "$d"`
    lines.push(
      loc.local
        ? `d=${loc.word}; [ -d "$d" ] && { ${add}; }`
        : `d=${loc.word}; for f in "$d"/snapshots/*; do [ -e "$f" ] && { ${add}; }; break; done`,
    )
  })
  lines.push('[ $# -gt 0 ] && du -sb -- "$@" 2>/dev/null', 'true')
  return lines.join('\n')
}

/** What the probe found for one location. */
export interface Presence {
  present: boolean
  /** null when absent, or present but du could not read it. */
  bytes: number | null
}

/** The probe's output → the node's hub root, and presence and bytes per location index. */
export function parseProbe(stdout: string, count: number): { hub: string | null; found: Presence[] } {
  const out: Presence[] = Array.from({ length: count }, () => ({ present: false, bytes: null }))
  const byPath = new Map<string, number[]>()
  const sizes: [string, number][] = []
  let hub: string | null = null
  for (const line of stdout.slice(0, MAX_PROBE_OUTPUT).split('\n')) {
    const root = /^H (\/.*)$/.exec(line)
    if (root && hub === null) {
      hub = root[1] as string
      continue
    }
    const present = /^P (\d+) (.+)$/.exec(line)
    if (present) {
      const i = Number(present[1])
      if (i < count) byPath.set(present[2] as string, [...(byPath.get(present[2] as string) ?? []), i])
      continue
    }
    const du = /^(\d+)\t(.+)$/.exec(line)
    if (du) sizes.push([du[2] as string, Number(du[1])])
  }
  for (const idx of byPath.values()) for (const i of idx) out[i] = { present: true, bytes: null }
  for (const [p, bytes] of sizes) for (const i of byPath.get(p) ?? []) out[i] = { present: true, bytes }
  return { hub, found: out }
}

/** Where a location is on a node, once the node told its hub root. */
function shownPath(loc: WeightsLocation, hub: string | null): string {
  return hub !== null && loc.hubDir !== undefined ? `${hub}/${loc.hubDir}` : loc.display
}

/** Weights on disk (spec 2.4): probing, sizing and deleting a model's weights on the nodes. */
export class WeightsOnDisk {
  private last: { at: number; bytes: Map<string, number | null> } | null = null

  constructor(private readonly deps: WeightsOnDiskDeps) {}

  /** Every catalog model on the nodes it is probed on, one SSH command per node, every node at once. */
  async status(signal?: AbortSignal): Promise<DiskStatus> {
    const models = this.deps.catalog.list().map((e) => ({ def: e.def, loc: weightsLocation(e.def) }))
    const configured = this.configured()
    const perNode = await Promise.all(
      ['node1', 'node2', ...configured.filter((n) => n !== 'node1' && n !== 'node2')].map(async (node) => {
        const wanted = models.filter((m) => probedNodes(m.def, configured).includes(node))
        return {
          node,
          wanted,
          result: await this.probe(
            node,
            wanted.map((m) => m.loc),
            signal,
          ),
        }
      }),
    )
    const entries = new Map<string, DiskEntry[]>()
    const bytes = new Map<string, number | null>()
    for (const { node, wanted, result } of perNode) {
      wanted.forEach((m, i) => {
        const found = result.ok ? result.found[i] : undefined
        const size = found?.bytes ?? null
        const entry: DiskEntry = {
          node,
          present: found?.present === true,
          bytes: size,
          path: shownPath(m.loc, result.ok ? result.hub : null),
          error: result.ok ? null : result.error,
        }
        entries.set(m.def.key, [...(entries.get(m.def.key) ?? []), entry])
        if (result.ok) bytes.set(`${m.def.key}@${node}`, size)
      })
    }
    const now = this.deps.clock.now()
    this.last = { at: now, bytes }
    return {
      models: models.map(({ def }) => {
        const nodes = entries.get(def.key) ?? []
        const own = nodesFor(def)
        const home = nodes.filter((n) => own.includes(n.node))
        return { key: def.key, on_disk: home.length > 0 && home.every((n) => n.present), nodes }
      }),
      checked_at: now,
    }
  }

  /** Bytes of a model's weights on one node, null when absent or the node cannot be read. */
  async bytesOn(key: string, node: NodeName): Promise<number | null> {
    const def = this.deps.catalog.get(key).def
    const last = this.last
    const cached =
      last && this.deps.clock.now() - last.at < BYTES_FRESH_MS ? last.bytes.get(`${key}@${node}`) : undefined
    if (cached !== undefined) return cached
    const result = await this.probe(node, [weightsLocation(def)])
    return result.ok ? (result.found[0]?.bytes ?? null) : null
  }

  /**
   * Deletes a model's weights on every node disk status probes for it; refused for local models, a
   * placed model, and during a swap or download.
   */
  async remove(key: string): Promise<{ deleted: { node: NodeName; path: string; bytes: number | null }[] }> {
    const def = this.deps.catalog.get(key).def
    this.refuseRemoval(def)
    const loc = weightsLocation(def)
    const nodes = probedNodes(def, this.configured())
    const results = await Promise.allSettled(nodes.map((node) => this.removeOn(node, loc)))
    const deleted: { node: NodeName; path: string; bytes: number | null }[] = []
    const failed: string[] = []
    results.forEach((r, i) => {
      const node = nodes[i] as NodeName
      if (r.status === 'fulfilled') deleted.push({ node, path: r.value.path, bytes: r.value.bytes })
      else failed.push(`${node}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`)
    })
    this.last = null
    await Promise.all(
      deleted.map((d) =>
        this.deps.nodes.connectivity.report(d.node, {
          ok: true,
          source: 'disk-delete',
          detail: `weights of ${key} removed from ${d.path}${d.bytes === null ? '' : ` (${d.bytes} bytes)`}`,
        }),
      ),
    )
    if (failed.length > 0) {
      const done = deleted.length > 0 ? `; removed on ${deleted.map((d) => d.node).join(', ')}` : ''
      throw new ApiError('upstream_unreachable', `could not remove the weights of ${key}: ${failed.join('; ')}${done}`)
    }
    this.deps.logger.info('weights removed', { key, nodes: deleted.map((d) => d.node) })
    return { deleted }
  }

  private refuseRemoval(def: ModelDef): void {
    if (def.local_path !== undefined)
      throw new ApiError('conflict', `${def.key} is a local model: Tandem does not delete ${def.local_path}`)
    if (this.deps.swap.loaded()?.key === def.key)
      throw new ApiError(
        'conflict',
        `${def.key} is the loaded model; swap to another model before deleting its weights`,
      )
    const placed = this.deps.swap.placementsOf?.(def.key) ?? []
    if (placed.length > 0)
      throw new ApiError(
        'conflict',
        `${def.key} is placed (${placed.join(', ')}); stop that placement before deleting its weights`,
      )
    if (this.deps.swap.busy())
      throw new ApiError('conflict', 'a model swap is in progress; delete the weights after it')
    const download = this.deps.jobs.list('download').find((j) => j.state === 'running')
    if (download)
      throw new ApiError(
        'conflict',
        `a download is running (${download.id}: ${download.title}); delete the weights after it`,
      )
  }

  /** The nodes configured with an SSH target (a malformed NODES entry leaves its name without one). */
  private configured(): string[] {
    const targets = this.deps.nodes.targets
    return nodeNames({ nodes: targets }).filter((n) => targets[n] !== null && targets[n] !== undefined)
  }

  /** Measures, then removes; answers the path as the node resolved it and the bytes freed (null when nothing was there). */
  private async removeOn(node: NodeName, loc: WeightsLocation): Promise<{ path: string; bytes: number | null }> {
    const target = this.deps.nodes.targets[node]
    if (!target) throw new Error(`${node} is not configured`)
    const command = [
      `d=${loc.word}; printf 'D %s\\n' "$d"`,
      'if [ -d "$d" ]; then du -sb -- "$d" 2>/dev/null | cut -f1; rm -rf -- "$d"; else echo -; fi',
    ].join('\n')
    const res = await this.deps.nodes.pool.exec(target, command, { timeoutMs: DELETE_TIMEOUT_MS })
    if (res.code !== 0) throw new Error(res.stderr.trim().slice(0, 500) || `exit status ${String(res.code)}`)
    const [first = '', second = '-'] = res.stdout.trim().split('\n')
    const shown = /^D (\/.*)$/.exec(first)
    return { path: shown ? (shown[1] as string) : loc.display, bytes: /^\d+$/.test(second) ? Number(second) : null }
  }

  private async probe(
    node: NodeName,
    locations: readonly WeightsLocation[],
    signal?: AbortSignal,
  ): Promise<{ ok: true; found: Presence[]; hub: string | null } | { ok: false; error: string }> {
    if (locations.length === 0) return { ok: true, found: [], hub: null }
    const target = this.deps.nodes.targets[node]
    if (!target) return { ok: false, error: `${node} is not configured` }
    try {
      const res = await this.deps.nodes.pool.exec(target, probeCommand(locations), {
        timeoutMs: PROBE_TIMEOUT_MS,
        signal,
      })
      if (res.code !== 0)
        return { ok: false, error: res.stderr.trim().slice(0, 500) || `exit status ${String(res.code)}` }
      return { ok: true, ...parseProbe(res.stdout, locations.length) }
    } catch (err) {
      const message = err instanceof SshError || err instanceof Error ? err.message : String(err)
      return { ok: false, error: message }
    }
  }
}
