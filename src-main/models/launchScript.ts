import YAML from 'yaml'

/**
 * What the launcher's recipe runner (`run-recipe.py`) hands to `launch-cluster.sh --launch-script`,
 * rebuilt by Tandem for launchers that have no runner, and read back from the runner's `--dry-run`.
 * The rules are the runner's own, learned by reading it and checked against its recorded output
 * (test/fixtures/recipes/upstream-358bf26/README.md): PyYAML `safe_load` (YAML 1.1, the last of a
 * duplicated key wins), `export KEY="VALUE"` per env entry, one pass of Python `str.format` over the
 * command, extra args quoted as `shlex.quote` does and appended, and the distributed backend flag
 * removed for a solo or no-Ray run (added for `--ray`).
 */

/** A recipe as the runner reads it: values already rendered as Python's `str()` renders them. */
export interface ScriptRecipe {
  readonly name: string
  readonly command: string
  readonly defaults: Readonly<Record<string, string>>
  readonly env: Readonly<Record<string, string>>
}

/** How the script is made: a solo run, extra engine args after `--`, Ray kept or added. */
export interface ScriptOptions {
  readonly overrides: Readonly<Record<string, string>>
  readonly solo: boolean
  readonly extraArgs: readonly string[]
  readonly useRay: boolean
}

/** Parses recipe YAML as PyYAML's `safe_load` does where recipes differ from YAML 1.2. */
export function parseRecipeYaml(text: string): unknown {
  // intAsBigInt keeps ints apart from floats (`1.0` stays a float, rendered "1.0" like Python).
  return YAML.parse(text, { version: '1.1', uniqueKeys: false, intAsBigInt: true })
}

/** Python's `repr` of a float (what `str()` prints): shortest round trip, exponent form outside 1e-4..1e16. */
function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan'
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf'
  const abs = Math.abs(x)
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e16)) {
    const [mant, exp] = x.toExponential().split('e') as [string, string]
    const e = Number(exp)
    return `${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`
  }
  const s = String(x)
  return Number.isInteger(x) ? `${s}.0` : s
}

/** A YAML value as Python's `str()` renders it (None, True/False, ints, floats, text). */
export function pyStr(value: unknown): string {
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'number') return pyFloat(value)
  if (typeof value === 'string') return value
  throw new Error('a list or mapping value is not supported here')
}

/** A number given on the runner's command line: `type=int` prints as an int, `type=float` as a float. */
export function pyNumber(value: number, kind: 'int' | 'float'): string {
  return kind === 'int' ? String(Math.trunc(value)) : pyFloat(value)
}

/**
 * One pass of Python `str.format(**params)` for the placeholders recipes use: `{name}`, `{{` and
 * `}}`. A field with a conversion, format spec, index or attribute, a lone brace, or a missing
 * parameter is refused with Python's own reason.
 */
export function pyFormat(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{|\}\}|\{([^{}]*)\}|[{}]/g, (m, field: string | undefined) => {
    if (m === '{{') return '{'
    if (m === '}}') return '}'
    if (field === undefined)
      throw new Error(m === '}' ? "Single '}' encountered in format string" : "Single '{' encountered in format string")
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field))
      throw new Error(
        `the placeholder {${field}} is not a plain name (conversions, specs and indexes are not supported)`,
      )
    const value = params[field]
    if (value === undefined) throw new Error(`missing parameter in recipe command: '${field}'`)
    return value
  })
}

/** Python's `shlex.quote`. */
export function pyShlexQuote(s: string): string {
  if (s === '') return "''"
  if (!/[^\w@%+=:,./-]/.test(s)) return s
  return `'${s.replace(/'/g, `'"'"'`)}'`
}

const BACKEND = /--distributed-executor-backend(?:=|\s+)\S+/g

function stripBackend(command: string): string {
  return command
    .replace(BACKEND, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && line.trim() !== '\\')
    .join('\n')
}

function ensureRay(command: string): string {
  if (!command.includes('vllm serve')) return command
  if (new RegExp(BACKEND.source).test(command)) return command
  return `${command.trimEnd()} --distributed-executor-backend ray`
}

/** Python's `str.rstrip(chars)`. */
function rstripChars(s: string, chars: string): string {
  let end = s.length
  while (end > 0 && chars.includes(s[end - 1] as string)) end--
  return s.slice(0, end)
}

/** The launch script, byte for byte as the runner generates it. */
export function launchScript(recipe: ScriptRecipe, opts: ScriptOptions): string {
  const params = { ...recipe.defaults, ...opts.overrides }
  const lines = ['#!/bin/bash', `# Generated from recipe: ${recipe.name}`, '']
  const env = Object.entries(recipe.env)
  if (env.length > 0) {
    lines.push('# Environment variables')
    for (const [key, value] of env) lines.push(`export ${key}="${value}"`)
    lines.push('')
  }
  let command = pyFormat(recipe.command, params).trimEnd()
  if (command.endsWith('\\')) command = rstripChars(command, '\\\n').trimEnd()
  if (opts.extraArgs.length > 0) command = `${command} ${opts.extraArgs.map(pyShlexQuote).join(' ')}`
  command = opts.solo || !opts.useRay ? stripBackend(command) : ensureRay(command)
  lines.push('# Run the model', command.trim(), '')
  return lines.join('\n')
}

/**
 * Splits a command into words the way a POSIX shell would for the plain subset recipes use:
 * blanks, backslash-newline continuations, single and double quotes. Anything that would make
 * the shell do more (expansion, substitution, redirection, a second command) is refused; inside
 * quotes `<`, `>`, `|` and the like are plain characters, as they are to the shell.
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

const SCRIPT_START = '=== Generated Launch Script ==='
const SCRIPT_END = '=== What would be executed ==='

/** The launch script in the runner's `--dry-run` output, or null when it printed none (it refused). */
export function dryRunScript(stdout: string): string | null {
  const start = stdout.indexOf(`${SCRIPT_START}\n`)
  const end = stdout.indexOf(`\n${SCRIPT_END}`)
  if (start === -1 || end === -1 || end < start) return null
  // print() adds a newline after the script's own last one.
  return stdout.slice(start + SCRIPT_START.length + 1, end)
}
