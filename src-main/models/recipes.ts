import { randomBytes } from 'node:crypto'
import YAML from 'yaml'
import { z } from 'zod'
import type { Config } from '../config/load'
import { badInput, notFound } from '../contract/errors'
import type { ModelDef, Recipe } from '../contract/models'
import { ModelRepo } from '../contract/schemas'
import type { Logger } from '../core/logger'
import type { NodesModule } from '../nodes/module'
import { remoteDir } from '../ssh/quote'
import { validateModelDef } from './catalog'

/**
 * The launcher checkout's recipes (spec 4.2; the launcher's recipes/README.md): YAML files with a
 * `vllm serve` command template, `{param}` placeholders filled from `defaults`, and solo/cluster
 * flags. Each is read over SSH from node1, turned into a ModelDef and put through the catalog's
 * validator; a refused recipe is listed with the reason and can never be imported.
 */

/** At most this many recipe files, each at most this many bytes, are read. */
export const MAX_RECIPES = 200
export const MAX_RECIPE_BYTES = 64 * 1024
const READ_TIMEOUT_MS = 15_000

type RecipeView = z.infer<typeof Recipe>

const Scalar = z.union([z.string(), z.number(), z.boolean()])
const RecipeFile = z.object({
  name: z.string().max(200).optional(),
  description: z.string().max(2000).optional(),
  model: z.string().max(200).optional(),
  cluster_only: z.boolean().optional(),
  solo_only: z.boolean().optional(),
  defaults: z.record(z.string(), Scalar.nullable()).nullish(),
  env: z.record(z.string(), Scalar.nullable()).nullish(),
  mods: z.array(z.string()).nullish(),
  command: z.string().max(MAX_RECIPE_BYTES),
})

/** Flags the launcher or the swap decide (host, port; the tensor-parallel layout unless cluster-only). */
const LAUNCH_FLAGS = new Set(['--host', '--port'])
const LAYOUT_FLAGS = new Set(['-tp', '--tensor-parallel-size', '--distributed-executor-backend'])

/** `{param}` from the recipe's defaults; `{{` and `}}` are literal braces (the launcher's format rules). */
export function resolveTemplate(command: string, defaults: Record<string, unknown>): string {
  return command.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string | undefined) => {
    if (m === '{{') return '{'
    if (m === '}}') return '}'
    const value = defaults[name as string]
    if (value === undefined || value === null) throw new Error(`template parameter {${name}} has no default`)
    return String(value)
  })
}

/**
 * Splits a command into words the way a POSIX shell would for the plain subset recipes use:
 * blanks, backslash-newline continuations, single and double quotes. Anything that would make
 * the shell do more (expansion, substitution, redirection, a second command) is refused.
 */
export function shellWords(text: string): string[] {
  const words: string[] = []
  let word: string | null = null
  let i = 0
  const push = (s: string): void => {
    word = (word ?? '') + s
  }
  while (i < text.length) {
    const c = text[i] as string
    if (c === '\\' && text[i + 1] === '\n') i += 2
    else if (c === ' ' || c === '\t' || c === '\n') {
      if (word !== null) words.push(word)
      word = null
      i++
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end === -1) throw new Error('unterminated single quote')
      push(text.slice(i + 1, end))
      i = end + 1
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1)
      if (end === -1) throw new Error('unterminated double quote')
      const inner = text.slice(i + 1, end)
      if (/[$`\\]/.test(inner)) throw new Error('shell expansion inside double quotes is not supported')
      push(inner)
      i = end + 1
    } else if (/[;&|<>()$`\\*?[\]#~!{}]/.test(c)) {
      throw new Error(`shell syntax ${JSON.stringify(c)} in the command is not supported`)
    } else {
      push(c)
      i++
    }
  }
  if (word !== null) words.push(word)
  return words
}

/** A recipe file as read from node1, turned into the entry an import would create (or the reason not). */
export function recipeToView(file: string, text: string, localRoots: readonly string[]): RecipeView {
  const name = file.replace(/\.ya?ml$/, '')
  let doc: z.infer<typeof RecipeFile> | null = null
  try {
    doc = RecipeFile.parse(YAML.parse(text))
    const def = recipeToModelDef(name, doc)
    return view(name, doc, validateModelDef(def, localRoots), null)
  } catch (err) {
    const reason =
      err instanceof z.ZodError ? `not a recipe: ${err.issues[0]?.message ?? 'invalid'}` : (err as Error).message
    return view(name, doc, null, reason)
  }
}

function view(
  name: string,
  doc: z.infer<typeof RecipeFile> | null,
  model: ModelDef | null,
  error: string | null,
): RecipeView {
  return {
    name,
    description: doc?.description?.trim() ?? doc?.name ?? '',
    solo: doc?.cluster_only !== true,
    cluster: doc?.solo_only !== true,
    model,
    error,
  }
}

function recipeToModelDef(name: string, doc: z.infer<typeof RecipeFile>): unknown {
  const words = shellWords(resolveTemplate(doc.command, doc.defaults ?? {}))
  if (words[0] !== 'vllm' || words[1] !== 'serve' || words[2] === undefined || words[2].startsWith('-'))
    throw new Error('the command is not `vllm serve <model> …`')
  const source = words[2]
  const clusterOnly = doc.cluster_only === true
  const engineArgs: string[] = []
  for (let i = 3; i < words.length; i++) {
    const w = words[i] as string
    const flag = (w.split('=')[0] as string).replace(/_/g, '-')
    const dropped = LAUNCH_FLAGS.has(flag) || (!clusterOnly && LAYOUT_FLAGS.has(flag))
    if (!dropped) engineArgs.push(w)
    else if (!w.includes('=') && i + 1 < words.length && !(words[i + 1] as string).startsWith('-')) i++
  }
  const notes = [
    doc.mods && doc.mods.length > 0 ? `mods not applied: ${doc.mods.join(', ')}` : null,
    doc.env && Object.keys(doc.env).length > 0 ? `environment not applied: ${Object.keys(doc.env).join(', ')}` : null,
  ].filter((n): n is string => n !== null)
  const isRepo = ModelRepo.safeParse(source).success
  return {
    key: name,
    name: doc.name ?? name,
    ...(isRepo ? { repo: source } : source.startsWith('/') ? { local_path: source } : { repo: source }),
    engine_args: engineArgs,
    mode: clusterOnly ? 'cluster' : doc.solo_only === true ? 'solo' : 'both',
    description: [`From launcher recipe ${name}.`, doc.description?.trim(), ...notes]
      .filter(Boolean)
      .join(' ')
      .slice(0, 2000),
  }
}

export interface RecipesOptions {
  readonly config: Pick<Config, 'llm' | 'models'>
  readonly nodes: Pick<NodesModule, 'pool' | 'targets'>
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
    const roots = this.opts.config.models.localRoots
    const recipes = splitFiles(stdout, mark).map((f) => recipeToView(f.file, f.text, roots))
    return { recipes: recipes.sort((a, b) => a.name.localeCompare(b.name)), hint: null }
  }

  /** The custom entry a recipe imports as; 404 for an unknown recipe, 400 with the reason for a refused one. */
  async toModelDef(name: string): Promise<ModelDef> {
    const { recipes, hint } = await this.list()
    const recipe = recipes.find((r) => r.name === name)
    if (!recipe) throw notFound(hint ?? `no launcher recipe named ${JSON.stringify(name)}`)
    if (recipe.model === null) throw badInput(`recipe ${name} cannot be imported: ${recipe.error ?? 'refused'}`)
    return recipe.model
  }
}

/**
 * One bounded command: each `recipes/*.yaml` (top level only, at most MAX_RECIPES files, each cut
 * at MAX_RECIPE_BYTES) after a separator line naming it; `<mark> none` when there is no folder.
 */
export function readCommand(launcherDir: string, mark: string): string {
  const recipes = `${remoteDir(launcherDir)}/recipes`
  return [
    `d=${recipes}`,
    `if [ ! -d "$d" ]; then echo '${mark} none'; exit 0; fi`,
    'n=0',
    'for f in "$d"/*.yaml; do',
    '  [ -f "$f" ] || continue',
    '  n=$((n+1)); [ "$n" -le ' + String(MAX_RECIPES) + ' ] || break',
    `  printf '%s %s\\n' '${mark} file' "$(basename "$f")"`,
    `  head -c ${String(MAX_RECIPE_BYTES)} "$f"; echo`,
    'done',
  ].join('\n')
}

function splitFiles(stdout: string, mark: string): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = []
  for (const chunk of stdout.split(`${mark} file `).slice(1)) {
    const nl = chunk.indexOf('\n')
    const file = (nl === -1 ? chunk : chunk.slice(0, nl)).trim()
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.yaml$/.test(file)) continue
    out.push({ file, text: nl === -1 ? '' : chunk.slice(nl + 1) })
  }
  return out
}
