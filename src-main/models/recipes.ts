import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { Config } from '../config/load'
import { badInput, conflict, notFound } from '../contract/errors'
import { RecipePath, type ModelDef, type ModelMode, type Recipe, type RecipeSource } from '../contract/models'
import { ModelRepo } from '../contract/schemas'
import type { Logger } from '../lib/logger'
import type { NodesModule } from '../nodes/module'
import { remoteDir, shq } from '../ssh/quote'
import { validateModelDef } from './catalog'
import { LLM_IMAGE, modPath, PARALLEL_SIZE_FLAGS, parallelism } from './launch'
import { parseRecipeYaml, pyFormat, pyStr, shellWords } from './launchScript'

export { shellWords }
import { nodeNames } from '../config/nodes'

/**
 * The launcher checkout's recipes (spec 4.2; test/fixtures/recipes/README.md has the format as
 * learned from the launcher): YAML files with a `vllm serve` command template, `{param}`
 * placeholders filled from `defaults`, the image (`container`) and its `build_args`, `mods`, and
 * solo/cluster flags. Each is read over SSH from node1, turned into a ModelDef and put through the
 * catalog's validator; a refused recipe, or one needing more nodes than are configured, is listed
 * with the reason and can never be imported.
 */

/** At most this many recipe files, each at most this many bytes, are read. */
export const MAX_RECIPES = 200
export const MAX_RECIPE_BYTES = 64 * 1024
const READ_TIMEOUT_MS = 15_000

type RecipeView = z.infer<typeof Recipe>

// bigint: a YAML int (read apart from floats so each renders as Python renders it).
const Scalar = z.union([z.string(), z.number(), z.bigint(), z.boolean()])
const RecipeFile = z.object({
  name: Scalar.transform(pyStr).optional(),
  description: z.string().max(2000).optional(),
  model: z.string().max(200).optional(),
  container: z.string().max(512).optional(),
  cluster_only: z.boolean().nullish(),
  solo_only: z.boolean().nullish(),
  defaults: z.record(z.string(), Scalar.nullable()).nullish(),
  env: z.record(z.string(), Scalar.nullable()).nullish(),
  mods: z.array(z.string()).nullish(),
  // A YAML list item such as `- 8` is a number; build-and-copy.sh receives it as a word.
  build_args: z.array(Scalar.transform(pyStr)).nullish(),
  command: z.string().max(MAX_RECIPE_BYTES),
})
type RecipeFile = z.infer<typeof RecipeFile>

/** What the recipe is read against: the allowed local roots and the nodes configured here. */
export interface RecipeContext {
  readonly localRoots: readonly string[]
  /** Every configured node: node1, node2 and the ones from NODES. */
  readonly nodeCount: number
  /** The configured nodes that were down at the last probe (a run on them cannot start now). */
  readonly down?: readonly string[]
  /** node2, where build-and-copy.sh copies a cluster model's image; null when not configured. */
  readonly peer: { readonly host: string; readonly user: string } | null
}

/** The import handle of a recipe file: its name without `.yaml`, a subfolder's prefixed `<folder>--`. */
export function recipeName(file: string): string {
  return file.replace(/\.ya?ml$/, '').replace('/', '--')
}

/**
 * Flags the launcher or Tandem set (value taken: true): host and port are Tandem's; the executor
 * backend and the per-node arguments are launch-cluster.sh's (its usage says not to pass them).
 */
const LAUNCH_FLAGS = new Map<string, boolean>([
  ['--host', true],
  ['--port', true],
  ['--distributed-executor-backend', true],
  ['--nnodes', true],
  ['--node-rank', true],
  ['--master-addr', true],
  ['--master-port', true],
  ['--headless', false],
])

type Axis = 'tp' | 'pp' | 'dp'
/** How a recipe runs: the entry's mode, its parallel sizes and the nodes that takes. */
interface Layout {
  readonly mode: ModelMode
  readonly sizes: Readonly<Record<Axis, number>>
  readonly nodes: number
  /** Why the recipe cannot run at all, whatever the cluster (contradictory flags). */
  readonly problem: string | null
}

/** `{param}` from the recipe's defaults, as the runner fills them (Python `str.format`, values as `str()`). */
export function resolveTemplate(command: string, defaults: Record<string, unknown>): string {
  const params = Object.fromEntries(Object.entries(defaults).map(([k, v]) => [k, pyStr(v)]))
  return pyFormat(command, params)
}

/** A recipe file as read from node1: the entry an import would create, whether it can run here, or why not. */
export function recipeToView(file: string, text: string, ctx: RecipeContext): RecipeView {
  const name = recipeName(file)
  let doc: RecipeFile | null = null
  let layout: Layout | null = null
  try {
    doc = RecipeFile.parse(parseRecipeYaml(text))
    const words = commandWords(doc)
    layout = recipeLayout(doc, words)
    const def = validateModelDef(recipeToModelDef(name, file, doc, words, layout, ctx), ctx.localRoots)
    return view(name, file, doc, layout, ctx, def, null)
  } catch (err) {
    const reason =
      err instanceof z.ZodError
        ? `not a recipe: ${[err.issues[0]?.path.join('.'), err.issues[0]?.message ?? 'invalid'].filter(Boolean).join(': ')}`
        : (err as Error).message
    return view(name, file, doc, layout, ctx, null, reason)
  }
}

function view(
  name: string,
  file: string,
  doc: RecipeFile | null,
  layout: Layout | null,
  ctx: RecipeContext,
  model: ModelDef | null,
  error: string | null,
): RecipeView {
  const reason = error ?? (layout === null ? 'the recipe could not be read' : layoutProblem(layout, ctx))
  return {
    name,
    path: file,
    description: doc?.description?.trim() ?? doc?.name ?? '',
    solo: layout === null ? doc?.cluster_only !== true : layout.mode !== 'cluster',
    cluster: layout === null ? doc?.solo_only !== true : layout.mode !== 'solo',
    nodes_needed: layout?.nodes ?? null,
    runnable: reason === null,
    reason,
    model,
    error,
  }
}

/** Why a layout cannot run on the nodes configured and reachable here, or null when it can. */
function layoutProblem(layout: Layout, ctx: RecipeContext): string | null {
  if (layout.problem !== null) return layout.problem
  const nodeCount = ctx.nodeCount
  const down = ctx.down ?? []
  if (layout.nodes <= nodeCount - down.length) return null
  if (layout.nodes <= nodeCount)
    return `needs ${String(layout.nodes)} nodes; ${String(nodeCount)} configured here, but ${down.join(', ')} ${down.length > 1 ? 'were' : 'was'} unreachable at the last probe`
  const { tp, pp, dp } = layout.sizes
  const why =
    tp * pp * dp < layout.nodes
      ? 'cluster only'
      : `tensor parallel ${String(tp)} × pipeline ${String(pp)} × data ${String(dp)}, one GPU per Spark`
  return `needs ${String(layout.nodes)} nodes (${why}); ${String(nodeCount)} configured here`
}

/**
 * The command as the launcher runs it, in words. A solo-only recipe is filled the way the launcher
 * fills a solo run: `tensor_parallel` is 1 whatever its default (run-recipe.py).
 */
function commandWords(doc: RecipeFile): string[] {
  const params: Record<string, unknown> = { ...(doc.defaults ?? {}) }
  if (doc.solo_only === true && doc.cluster_only !== true) params.tensor_parallel = 1n
  const words = shellWords(resolveTemplate(doc.command, params))
  if (words[0] !== 'vllm' || words[1] !== 'serve' || words[2] === undefined || words[2].startsWith('-'))
    throw new Error('the command is not `vllm serve <model> …`')
  return words
}

/** `--flag=value` and `--flag` with underscores read as hyphens (as vLLM reads them); null for a non-flag. */
function flagName(word: string): string | null {
  if (!word.startsWith('-')) return null
  const name = word.split('=')[0] as string
  return name.startsWith('--') ? name.replace(/_/g, '-') : name
}

/** The parallel sizes of the command, read as a launch reads them (launch.ts), 1 where unset. */
function parallelSizes(words: readonly string[]): Record<Axis, number> {
  const p = parallelism(words.slice(3))
  return { tp: p.tp ?? 1, pp: p.pp ?? 1, dp: p.dp ?? 1 }
}

/**
 * The mode and node count: solo-only runs on node1; cluster-only needs at least two nodes; a recipe
 * for either runs solo (the runner forces tensor parallel 1) or across the nodes its command asks for.
 */
function recipeLayout(doc: RecipeFile, words: readonly string[]): Layout {
  const sizes = parallelSizes(words)
  const product = sizes.tp * sizes.pp * sizes.dp
  if (doc.solo_only === true && doc.cluster_only === true)
    return { mode: 'solo', sizes, nodes: product, problem: 'the recipe is marked both solo-only and cluster-only' }
  if (doc.solo_only === true) {
    const problem = product > 1 ? `a solo-only recipe whose command needs ${String(product)} GPUs` : null
    return { mode: 'solo', sizes, nodes: product, problem }
  }
  if (doc.cluster_only === true) return { mode: 'cluster', sizes, nodes: Math.max(2, product), problem: null }
  return { mode: 'both', sizes, nodes: 1, problem: null }
}

/**
 * The serve arguments an entry keeps: without the flags Tandem and the launcher set. A cluster
 * entry keeps its parallel flags (they fix how many nodes it spans); a solo or either-mode entry
 * drops a parallel size of 1, leaving the layout to the swap.
 */
function engineArgs(words: readonly string[], mode: ModelMode): string[] {
  const out: string[] = []
  for (let i = 3; i < words.length; i++) {
    const w = words[i] as string
    const flag = flagName(w) ?? ''
    const next = words[i + 1]
    const valueWord = !w.includes('=') && next !== undefined && !next.startsWith('-') ? next : undefined
    const value = w.includes('=') ? w.slice(w.indexOf('=') + 1) : valueWord
    const launcherOwned = LAUNCH_FLAGS.has(flag)
    const unitLayout = mode !== 'cluster' && PARALLEL_SIZE_FLAGS.has(flag) && value === '1'
    if (!launcherOwned && !unitLayout) out.push(w)
    else if (valueWord !== undefined && LAUNCH_FLAGS.get(flag) !== false) i++
  }
  return out
}

/** A word of a displayed shell command: bare when it needs no quoting. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9._/:=@%+,-]+$/.test(word) ? word : shq(word)
}

/**
 * The build-and-copy.sh command that makes the recipe's image on node1 (`-t` its tag, then the
 * recipe's build arguments) and, for a model that may span both nodes, copies it to node2.
 */
export function imageBuildCommand(image: string, buildArgs: readonly string[], copyTo: RecipeContext['peer']): string {
  const copy = copyTo === null ? [] : ['-c', copyTo.host, '-u', copyTo.user, '--copy-parallel']
  return ['./build-and-copy.sh', '-t', image, ...buildArgs, ...copy].map(shellWord).join(' ')
}

/** What must happen outside Tandem for the entry to run: the image build; what the launcher applies: mods, env. */
function recipeNotes(doc: RecipeFile, layout: Layout, ctx: RecipeContext): string[] {
  const image = doc.container ?? LLM_IMAGE
  const buildArgs = doc.build_args ?? []
  const mods = doc.mods ?? []
  const env = Object.keys(doc.env ?? {})
  const notes: string[] = []
  if (layout.mode === 'both' && layout.sizes.tp * layout.sizes.pp * layout.sizes.dp > 1)
    notes.push(
      `Runs solo with tensor parallel 1, or across ${String(layout.sizes.tp * layout.sizes.pp * layout.sizes.dp)} nodes.`,
    )
  if (image !== LLM_IMAGE || buildArgs.length > 0) {
    const copyTo = layout.mode === 'solo' ? null : ctx.peer
    notes.push(`Runs in image ${image}; build it on node1 with \`${imageBuildCommand(image, buildArgs, copyTo)}\`.`)
  }
  if (mods.length > 0)
    notes.push(`Needs launcher mods, applied at launch with launch-cluster.sh --apply-mod: ${mods.join(', ')}.`)
  if (env.length > 0) notes.push(`The launch exports its environment: ${env.join(', ')}.`)
  return notes
}

/** What the entry keeps of the recipe: its path, and what a launch script is made from. */
function recipeSource(file: string, doc: RecipeFile): RecipeSource {
  const render = (m: Record<string, unknown> | null | undefined): Record<string, string> =>
    Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, pyStr(v)]))
  return {
    path: file,
    name: doc.name ?? 'None',
    command: doc.command,
    defaults: render(doc.defaults),
    env: render(doc.env),
  }
}

function recipeToModelDef(
  name: string,
  file: string,
  doc: RecipeFile,
  words: readonly string[],
  layout: Layout,
  ctx: RecipeContext,
): unknown {
  const source = words[2] as string
  const isRepo = ModelRepo.safeParse(source).success
  const buildArgs = doc.build_args ?? []
  const mods = (doc.mods ?? []).map(modPath)
  return {
    key: name,
    name: doc.name ?? name,
    ...(isRepo ? { repo: source } : source.startsWith('/') ? { local_path: source } : { repo: source }),
    engine_args: engineArgs(words, layout.mode),
    mode: layout.mode,
    ...(doc.container !== undefined ? { container: doc.container } : {}),
    ...(mods.length > 0 ? { mods } : {}),
    ...(buildArgs.length > 0 ? { build_args: buildArgs } : {}),
    recipe: recipeSource(file, doc),
    description: [`From launcher recipe ${name}.`, ...recipeNotes(doc, layout, ctx), doc.description?.trim()]
      .filter(Boolean)
      .join(' ')
      .slice(0, 2000),
  }
}

export interface RecipesOptions {
  readonly config: Pick<Config, 'llm' | 'models'>
  readonly nodes: Pick<NodesModule, 'pool' | 'targets'> & Partial<Pick<NodesModule, 'connectivity'>>
  readonly logger: Logger
}

export class Recipes {
  constructor(private readonly opts: RecipesOptions) {}

  /** Every recipe in the launcher checkout on node1; no checkout gives an empty list with a hint. */
  async list(): Promise<{ recipes: RecipeView[]; hint: string | null }> {
    const target = this.opts.nodes.targets.node1
    if (!target) return { recipes: [], hint: 'node1 is not configured, so the launcher recipes cannot be read.' }
    const dir = this.opts.config.llm.launcherDir
    const mark = `@@tandem-recipe-${randomBytes(8).toString('hex')}`
    let stdout: string
    try {
      const r = await this.opts.nodes.pool.exec(target, readCommand(dir, mark), { timeoutMs: READ_TIMEOUT_MS })
      if (r.code !== 0) throw new Error(r.stderr.trim().slice(0, 300) || `exit ${String(r.code)}`)
      stdout = r.stdout
    } catch (err) {
      this.opts.logger.warn('reading launcher recipes failed', { error: (err as Error).message })
      return { recipes: [], hint: `The launcher recipes on node1 could not be read: ${(err as Error).message}` }
    }
    if (stdout.startsWith(`${mark} none`))
      return {
        recipes: [],
        hint: `No launcher checkout with a recipes folder at ${dir} on node1: clone the launcher there to import its recipes.`,
      }
    const targets = this.opts.nodes.targets
    const node2 = targets.node2
    const configured = nodeNames({ nodes: targets }).filter((n) => targets[n] !== null && targets[n] !== undefined)
    const connectivity = this.opts.nodes.connectivity
    const ctx: RecipeContext = {
      localRoots: this.opts.config.models.localRoots,
      nodeCount: configured.length,
      down: configured.filter((n) => connectivity?.state(n)?.state === 'down'),
      peer: node2 ? { host: node2.host, user: node2.user } : null,
    }
    const recipes = splitFiles(stdout, mark).map((f) => recipeToView(f.file, f.text, ctx))
    return { recipes: recipes.sort((a, b) => a.name.localeCompare(b.name)), hint: null }
  }

  /**
   * The custom entry a recipe imports as: 404 for an unknown recipe, 400 with the reason for a
   * refused one, 409 for one that cannot run on the nodes configured here.
   */
  async toModelDef(name: string): Promise<ModelDef> {
    const { recipes, hint } = await this.list()
    const recipe = recipes.find((r) => r.name === name)
    if (!recipe) throw notFound(hint ?? `no launcher recipe named ${JSON.stringify(name)}`)
    if (recipe.model === null) throw badInput(`recipe ${name} cannot be imported: ${recipe.error ?? 'refused'}`)
    if (!recipe.runnable) throw conflict(`recipe ${name} is not runnable here: ${recipe.reason ?? 'refused'}`)
    return recipe.model
  }
}

/**
 * One bounded command: each `recipes/*.yaml` and `recipes/<folder>/*.yaml` (at most MAX_RECIPES
 * files, each cut at MAX_RECIPE_BYTES) after a separator line naming its path under `recipes/`;
 * `<mark> none` when there is no folder.
 */
export function readCommand(launcherDir: string, mark: string): string {
  const recipes = `${remoteDir(launcherDir)}/recipes`
  // One awk for every file (no process per file): each file's name under recipes/, then its lines
  // until MAX_RECIPE_BYTES (a longer line is cut there).
  const awk = [
    'FNR == 1 { n = 0; name = FILENAME; if (index(name, ENVIRON["TANDEM_D"]) == 1) name = substr(name, length(ENVIRON["TANDEM_D"]) + 1)',
    `  print "${mark} file " name }`,
    `n < ${String(MAX_RECIPE_BYTES)} { print substr($0, 1, ${String(MAX_RECIPE_BYTES)} - n); n += length($0) + 1 }`,
  ].join('\n')
  return [
    `d=${recipes}`,
    `if [ ! -d "$d" ]; then echo '${mark} none'; exit 0; fi`,
    'set --',
    'for f in "$d"/*.yaml "$d"/*/*.yaml; do',
    '  [ -f "$f" ] || continue',
    `  [ "$#" -lt ${String(MAX_RECIPES)} ] || break`,
    '  set -- "$@" "$f"',
    'done',
    '[ "$#" -gt 0 ] || exit 0',
    `TANDEM_D="$d/" awk ${shq(awk)} "$@"`,
  ].join('\n')
}

function splitFiles(stdout: string, mark: string): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = []
  for (const chunk of stdout.split(`${mark} file `).slice(1)) {
    const nl = chunk.indexOf('\n')
    const file = (nl === -1 ? chunk : chunk.slice(0, nl)).trim()
    if (!RecipePath.safeParse(file).success) continue
    out.push({ file, text: nl === -1 ? '' : chunk.slice(nl + 1) })
  }
  return out
}
