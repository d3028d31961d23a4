import fs from 'node:fs'
import path from 'node:path'
import YAML from 'yaml'
import type { z } from 'zod'
import type { Config } from '../config/load'
import { ApiError, conflict, notFound } from '../contract/errors'
import { ModelDef, type ModelTag, type RecipeSource } from '../contract/models'
import { Knobs } from '../contract/schemas'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import type { Logger } from '../lib/logger'
import { effectiveKnobs, knobsToArgs } from './knobs'
import { pyFormat, shellWords } from './launchScript'
import type { CatalogEntry, CatalogReader } from './types'

/**
 * The model catalog (spec 1, 2.2, 2.3): the bundled entries, then the overrides file's custom
 * entries and knob changes. The overrides file is the only thing it writes, always atomically.
 */

/** A flag (`--max-model-len`, `-tp`, `--x=value`): a dash run, then a name of safe characters. */
const FLAG = /^--?[A-Za-z0-9][A-Za-z0-9._-]*$/
/**
 * A flag's value or a bare value: JSON (`{"method":"mtp"}`) is allowed because every argument is
 * quoted at the point of use; still nothing the shell or the launcher's unquoted expansion treats
 * specially (`$`, backquote, `;`, `|`, `&`, `<`, `>`, parentheses, quotes other than `"`, backslash, glob).
 */
const VALUE = /^[A-Za-z0-9 ._:/,=+@%{}[\]"-]*$/
/** Outside and inside the double-quoted strings of a value; `"` itself is the separator. */
const UNQUOTED_PART = /^[A-Za-z0-9 ._:/,=+@%{}[\]-]*$/
/**
 * Inside a double-quoted string `<`, `>` and `|` are allowed too: a reasoning parser's
 * `"reasoning_start_str":"<think>"` and a stop token `"<|im_end|>"` need them, and were one shell
 * layer ever to lose the outer single quotes, double quotes still keep them literal.
 */
const QUOTED_PART = /^[A-Za-z0-9 ._:/,=+@%{}[\]<>|-]*$/

/** A value passes the safe set, or pairs its double quotes and holds `<`, `>` only inside them. */
function safeValue(value: string): boolean {
  if (VALUE.test(value)) return true
  const parts = value.split('"')
  // An odd count of quotes leaves a string open: nothing is known to be inside one.
  if (parts.length % 2 === 0) return false
  return parts.every((part, i) => (i % 2 === 1 ? QUOTED_PART : UNQUOTED_PART).test(part))
}
/** A chat template reference: a path or file name of safe characters. */
const TEMPLATE = /^[A-Za-z0-9._/-]+$/

/** Why one engine argument is refused, or null when it is acceptable. */
export function engineArgProblem(arg: string): string | null {
  if (arg.startsWith('-') && !/^-?\d/.test(arg.slice(1))) {
    const eq = arg.indexOf('=')
    const flag = eq === -1 ? arg : arg.slice(0, eq)
    if (!FLAG.test(flag)) return `engine argument ${JSON.stringify(arg)} is not a valid flag`
    if (eq !== -1 && !safeValue(arg.slice(eq + 1)))
      return `engine argument ${JSON.stringify(arg)} holds a character outside the safe set`
    return null
  }
  return safeValue(arg) ? null : `engine argument ${JSON.stringify(arg)} holds a character outside the safe set`
}

const badField = (param: string, message: string): ApiError => new ApiError('bad_input', message, { param })

function insideRoot(p: string, root: string): boolean {
  return root === '/' || p === root || p.startsWith(`${root}/`)
}

/**
 * The one validator for every entry that enters the catalog (POST, overrides file, recipe import):
 * the contract's ModelDef, then what only the catalog knows: the allowed local roots, the chat
 * template inside a local model, and the safe set for engine arguments. Throws a 400 naming the field.
 */
export function validateModelDef(input: unknown, localRoots: readonly string[]): ModelDef {
  const parsed = ModelDef.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const param = issue?.path.join('.') ?? ''
    throw badField(param, `${param || 'entry'}: ${issue?.message ?? 'invalid model definition'}`)
  }
  const def = parsed.data
  if (def.local_path !== undefined && !localRoots.some((r) => insideRoot(def.local_path as string, r)))
    throw badField('local_path', `local_path must lie inside one of ${localRoots.join(', ')}`)
  def.engine_args.forEach((arg, i) => {
    const problem = engineArgProblem(arg)
    if (problem) throw badField(`engine_args.${i}`, problem)
  })
  if (def.chat_template !== undefined) checkChatTemplate(def.chat_template, def.local_path)
  if (def.recipe !== undefined) checkRecipeCommand(def.recipe)
  return def
}

/**
 * A recipe entry's command runs in the container as a launch script: it must be `vllm serve …` in
 * plain words once filled (the rule recipe import applies), whoever sent the entry.
 */
function checkRecipeCommand(recipe: RecipeSource): void {
  let words: string[]
  try {
    words = shellWords(pyFormat(recipe.command, recipe.defaults))
  } catch (err) {
    throw badField('recipe.command', `recipe.command: ${(err as Error).message}`)
  }
  if (words[0] !== 'vllm' || words[1] !== 'serve')
    throw badField('recipe.command', 'recipe.command: the command is not `vllm serve <model> …`')
}

function checkChatTemplate(template: string, localPath: string | undefined): void {
  if (!TEMPLATE.test(template) || template.split('/').some((s) => s === '.' || s === '..'))
    throw badField('chat_template', 'chat_template: letters, digits, dot, dash, underscore and slash, no "." or ".."')
  if (localPath === undefined) return
  const full = template.startsWith('/') ? template : `${localPath}/${template}`
  if (!full.startsWith(`${localPath}/`))
    throw badField('chat_template', "a local model's chat_template must lie inside its local_path")
}

/**
 * Where the bundled catalog is: beside the built main bundle (out/main/resources/, copied by the
 * build), else in the source tree's resources/ (tests, tsx), else under the working directory.
 */
export function defaultBundledFile(): string {
  const here = path.dirname(__filename)
  const candidates = [
    path.join(here, 'resources', 'models.yaml'),
    path.resolve(here, '../../resources/models.yaml'),
    path.resolve('resources', 'models.yaml'),
  ]
  return candidates.find((f) => fs.existsSync(f)) ?? (candidates[0] as string)
}

/** The overrides file as written: custom entries and knob changes; invalid parts kept verbatim. */
interface Overrides {
  custom: ModelDef[]
  knobs: Record<string, Knobs>
  /** Entries the validator refused at load: written back unchanged so a hand edit is never lost. */
  invalidModels: unknown[]
  invalidKnobs: Record<string, unknown>
}

export interface CatalogOptions {
  readonly config: Pick<Config, 'models' | 'paths'>
  readonly logger: Logger
  /** The bundled catalog (tests point elsewhere). */
  readonly bundledFile?: string
}

export class ModelCatalog implements CatalogReader {
  private readonly bundled: ModelDef[]
  private overrides: Overrides
  private entries: CatalogEntry[] = []
  private readonly listeners: (() => void)[] = []
  private readonly logger: Logger

  constructor(private readonly opts: CatalogOptions) {
    this.logger = opts.logger
    this.bundled = this.loadBundled(opts.bundledFile ?? defaultBundledFile())
    this.overrides = this.loadOverrides()
    this.rebuild()
  }

  list(): readonly CatalogEntry[] {
    return this.entries
  }

  get(key: string): CatalogEntry {
    const entry = this.entries.find((e) => e.def.key === key)
    if (!entry) throw notFound(`no model ${JSON.stringify(key)} in the catalog`)
    return entry
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener)
  }

  /** Adds a custom entry; persisted before it is visible. A key already in the catalog is a 409. */
  add(input: unknown): CatalogEntry {
    const def = validateModelDef(input, this.opts.config.models.localRoots)
    if (this.entries.some((e) => e.def.key === def.key))
      throw conflict(`a model with key ${JSON.stringify(def.key)} is already in the catalog`)
    this.commit({ ...this.overrides, custom: [...this.overrides.custom, def] })
    return this.get(def.key)
  }

  /** Removes a custom entry and its knobs; bundled entries are a 409. */
  remove(key: string): void {
    const entry = this.get(key)
    if (entry.bundled) throw conflict(`${JSON.stringify(key)} is a bundled model and cannot be deleted`)
    const { [key]: _dropped, ...knobs } = this.overrides.knobs
    this.commit({ ...this.overrides, custom: this.overrides.custom.filter((d) => d.key !== key), knobs })
  }

  /** Replaces the model's knob override (a knob left out falls back to the value seeded from its args). */
  setKnobs(key: string, input: unknown): CatalogEntry {
    this.get(key)
    const parsed = Knobs.safeParse(input)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw badField(`knobs.${issue?.path.join('.') ?? ''}`, `knobs: ${issue?.message ?? 'invalid knobs'}`)
    }
    const knobs = { ...this.overrides.knobs }
    if (Object.keys(parsed.data).length === 0) delete knobs[key]
    else knobs[key] = parsed.data
    this.commit({ ...this.overrides, knobs })
    return this.get(key)
  }

  private commit(next: Overrides): void {
    atomicWriteFile(this.opts.config.paths.modelsOverrides, serialize(next), { role: 'model catalog' })
    this.overrides = next
    this.rebuild()
    for (const listener of this.listeners) {
      try {
        listener()
      } catch (err) {
        this.logger.error('catalog change listener failed', { error: (err as Error).message })
      }
    }
  }

  private rebuild(): void {
    const entry = (def: ModelDef, bundled: boolean): CatalogEntry => {
      const override = this.overrides.knobs[def.key] ?? {}
      const tags: z.infer<typeof ModelTag>[] = [bundled ? 'bundled' : 'custom']
      if (def.local_path !== undefined) tags.push('local')
      if (def.recipe !== undefined) tags.push('recipe')
      return {
        def,
        tags,
        bundled,
        effectiveKnobs: effectiveKnobs(def.engine_args, override),
        launchArgs: knobsToArgs(def.engine_args, override),
        knobs: override,
      }
    }
    this.entries = [...this.bundled.map((d) => entry(d, true)), ...this.overrides.custom.map((d) => entry(d, false))]
  }

  /** The bundled entries; a missing or broken file (a damaged install) leaves them empty, never stops the daemon. */
  private loadBundled(file: string): ModelDef[] {
    let doc: { models?: unknown } | null
    try {
      doc = YAML.parse(fs.readFileSync(file, 'utf8')) as { models?: unknown } | null
    } catch (err) {
      this.logger.error('bundled model catalog unreadable', { file, error: (err as Error).message })
      return []
    }
    const out: ModelDef[] = []
    for (const raw of Array.isArray(doc?.models) ? doc.models : []) {
      try {
        const def = validateModelDef(raw, this.opts.config.models.localRoots)
        if (out.some((d) => d.key === def.key)) throw new Error(`duplicate key ${def.key}`)
        out.push(def)
      } catch (err) {
        this.logger.error('bundled model entry skipped', { entry: entryName(raw), error: (err as Error).message })
      }
    }
    return out
  }

  /** The overrides file; an unparsable one is kept aside and the bundled catalog loads alone. */
  private loadOverrides(): Overrides {
    const empty: Overrides = { custom: [], knobs: {}, invalidModels: [], invalidKnobs: {} }
    const file = this.opts.config.paths.modelsOverrides
    const read = readStateFile(file, parseOverridesDocument)
    if (read.kind === 'missing') return empty
    if (read.kind === 'corrupt') {
      this.logger.warn(replacedStateFileMessage('models overrides file', file, read, 'the bundled catalog loads alone'))
      return empty
    }
    const out = empty
    const keys = new Set(this.bundled.map((d) => d.key))
    for (const raw of read.value.models) {
      try {
        const def = validateModelDef(raw, this.opts.config.models.localRoots)
        if (keys.has(def.key)) throw new Error(`key ${def.key} is already in the catalog`)
        keys.add(def.key)
        out.custom.push(def)
      } catch (err) {
        this.logger.warn('invalid override entry skipped', { entry: entryName(raw), error: (err as Error).message })
        out.invalidModels.push(raw)
      }
    }
    for (const [key, raw] of Object.entries(read.value.knobs)) {
      const parsed = Knobs.safeParse(raw)
      if (parsed.success && keys.has(key)) out.knobs[key] = parsed.data
      else {
        const error = parsed.success ? 'no such model' : (parsed.error.issues[0]?.message ?? 'invalid')
        this.logger.warn('invalid knob override skipped', { entry: key, error })
        out.invalidKnobs[key] = raw
      }
    }
    return out
  }
}

function parseOverridesDocument(text: string): { models: unknown[]; knobs: Record<string, unknown> } {
  const doc: unknown = YAML.parse(text)
  if (doc === null || doc === undefined) return { models: [], knobs: {} }
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('the overrides file is not a mapping')
  const { models, knobs } = doc as { models?: unknown; knobs?: unknown }
  if (models !== undefined && models !== null && !Array.isArray(models)) throw new Error('models: not a list')
  if (knobs !== undefined && knobs !== null && (typeof knobs !== 'object' || Array.isArray(knobs)))
    throw new Error('knobs: not a mapping')
  return { models: (models as unknown[] | null) ?? [], knobs: (knobs as Record<string, unknown> | null) ?? {} }
}

function serialize(o: Overrides): string {
  const knobs: Record<string, unknown> = { ...o.invalidKnobs, ...o.knobs }
  return YAML.stringify({ models: [...o.custom, ...o.invalidModels], knobs })
}

/** How a warning names an entry: its key when it has a printable one. */
function entryName(raw: unknown): string {
  const key = (raw as { key?: unknown } | null)?.key
  return typeof key === 'string' ? key.slice(0, 128) : '(entry without a key)'
}
