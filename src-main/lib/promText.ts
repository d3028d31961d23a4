/**
 * The Prometheus text exposition format (version 0.0.4), read and written. A bounded line reader
 * rather than a package: the one on npm (parse-prometheus-text-format) drops the labels of histogram
 * series, has no bounds and reshapes what it reads, while federating needs every series as it came.
 * A page with one line it cannot read is refused as a whole, as Prometheus refuses such a scrape.
 */

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'

/** One series: its own name (`x_bucket` within histogram `x`), labels in their order, value. */
export interface PromSample {
  readonly name: string
  readonly labels: readonly (readonly [string, string])[]
  readonly value: number
}

export interface PromFamily {
  readonly name: string
  readonly help: string | null
  readonly type: FamilyType
  readonly samples: PromSample[]
}

export class PromTextError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PromTextError'
  }
}

export interface ReadLimits {
  /** At most this many series in a page. */
  readonly maxSamples: number
  /** At most this many labels on one series. */
  readonly maxLabels?: number
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
const SUFFIXES: Readonly<Record<FamilyType, readonly string[]>> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
}

/** Go's ParseFloat forms the format allows, and the special values. */
function parseValue(token: string): number | null {
  if (/^[+-]?inf$/i.test(token)) return token.startsWith('-') ? -Infinity : Infinity
  if (/^nan$/i.test(token)) return NaN
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(token) && !/^[+-]?0[xX][0-9a-fA-F]+$/.test(token)) return null
  return Number(token)
}

/** A quoted label value from `line` at `at` (the opening quote): the value and the index of the closing one. */
function readQuoted(line: string, at: number): { value: string; end: number } | null {
  let value = ''
  for (let i = at + 1; i < line.length; i++) {
    const c = line[i]!
    if (c === '"') return { value, end: i }
    if (c !== '\\') value += c
    else value += line[++i] === 'n' ? '\n' : (line[i] ?? '')
  }
  return null
}

/** Reads `{a="b",c="d"}` from `line` at `at` (the `{`); returns the labels and where it ended. */
function readLabels(line: string, at: number, max: number): { labels: [string, string][]; end: number } | string {
  const labels: [string, string][] = []
  let i = at + 1
  for (;;) {
    while (line[i] === ' ') i++
    if (line[i] === '}') return { labels, end: i + 1 }
    const eq = line.indexOf('=', i)
    if (eq === -1) return 'a label without a value'
    const name = line.slice(i, eq).trim()
    if (!LABEL_NAME.test(name)) return `a bad label name ${JSON.stringify(name.slice(0, 40))}`
    i = eq + 1
    while (line[i] === ' ') i++
    const quoted = line[i] === '"' ? readQuoted(line, i) : null
    if (quoted === null) return `label ${name} has no quoted value`
    if (labels.some(([k]) => k === name)) return `label ${name} appears twice`
    labels.push([name, quoted.value])
    if (labels.length > max) return `more than ${max} labels`
    i = quoted.end + 1
    while (line[i] === ' ') i++
    if (line[i] === ',') i++
    else if (line[i] !== '}') return 'labels not separated by commas'
  }
}

function readSample(line: string, maxLabels: number): PromSample | string {
  const brace = line.indexOf('{')
  const space = line.search(/[ \t]/)
  const nameEnd = brace !== -1 && (space === -1 || brace < space) ? brace : space
  if (nameEnd <= 0) return 'not a series line'
  const name = line.slice(0, nameEnd)
  if (!NAME.test(name)) return `a bad metric name ${JSON.stringify(name.slice(0, 40))}`
  let labels: [string, string][] = []
  let rest = nameEnd
  if (nameEnd === brace) {
    const read = readLabels(line, brace, maxLabels)
    if (typeof read === 'string') return read
    labels = read.labels
    rest = read.end
  }
  const tokens = line
    .slice(rest)
    .trim()
    .split(/[ \t]+/)
  if (tokens.length < 1 || tokens.length > 2 || tokens[0] === '') return 'no value'
  const value = parseValue(tokens[0]!)
  if (value === null) return `value ${JSON.stringify(tokens[0]!.slice(0, 40))} is not a number`
  if (tokens[1] !== undefined && !/^-?\d+$/.test(tokens[1])) return 'a timestamp that is not whole milliseconds'
  // A timestamp is dropped: the federated series is as of Tandem's scrape.
  return { name, labels, value }
}

function unescapeHelp(text: string): string {
  return text.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'))
}

/** The family a series of that name belongs to, among those declared. */
function familyOf(families: Map<string, Declared>, current: Declared | null, name: string): Declared | null {
  if (current !== null && SUFFIXES[current.type].some((s) => current.name + s === name)) return current
  const own = families.get(name)
  if (own !== undefined && SUFFIXES[own.type].includes('')) return own
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue
    const f = families.get(name.slice(0, -suffix.length))
    if (f !== undefined && SUFFIXES[f.type].includes(suffix)) return f
  }
  return null
}

interface Declared {
  name: string
  help: string | null
  type: FamilyType
  typed: boolean
  samples: PromSample[]
}

class PageReader {
  readonly families = new Map<string, Declared>()
  private current: Declared | null = null
  private samples = 0

  constructor(private readonly limits: ReadLimits) {}

  comment(line: string): string | null {
    const m = /^#\s*(HELP|TYPE)\s+(\S+)(?:[ \t](.*))?$/.exec(line)
    if (m === null) return null // another comment
    const kind = m[1] as 'HELP' | 'TYPE'
    const name = m[2]!
    const rest = m[3] ?? ''
    if (!NAME.test(name)) return `a bad metric name ${JSON.stringify(name.slice(0, 40))}`
    const family = this.families.get(name) ?? this.declare(name)
    if (kind === 'HELP') {
      if (family.help !== null) return `a second HELP for ${name}`
      family.help = unescapeHelp(rest)
    } else {
      const type = rest.trim()
      if (!TYPES.has(type)) return `an unknown type ${JSON.stringify(type.slice(0, 20))} for ${name}`
      if (family.typed || family.samples.length > 0) return `a second TYPE for ${name}`
      family.type = type as FamilyType
      family.typed = true
    }
    this.current = family
    return null
  }

  sample(line: string): string | null {
    const s = readSample(line, this.limits.maxLabels ?? 64)
    if (typeof s === 'string') return s
    if (++this.samples > this.limits.maxSamples) return `more than ${this.limits.maxSamples} series`
    let family = familyOf(this.families, this.current, s.name)
    if (family === null) this.current = family = this.declare(s.name)
    family.samples.push(s)
    return null
  }

  private declare(name: string): Declared {
    const family: Declared = { name, help: null, type: 'untyped', typed: false, samples: [] }
    this.families.set(name, family)
    return family
  }
}

/** Reads lines from `at` (moved on) until the page ends (false) or `maxLines` were read (true). */
function readLines(reader: PageReader, text: string, at: { start: number; n: number }, maxLines: number): boolean {
  for (let read = 0; read < maxLines; read++) {
    if (at.start > text.length) return false
    let end = text.indexOf('\n', at.start)
    if (end === -1) end = text.length
    const line = text.slice(at.start, end).replace(/\r$/, '')
    at.start = end + 1
    at.n++
    if (line.trim() === '') continue
    if (line === '# EOF') return false
    const problem = line.startsWith('#') ? reader.comment(line) : reader.sample(line)
    if (problem !== null) throw new PromTextError(`line ${at.n}: ${problem}`)
  }
  return true
}

function familiesOf(reader: PageReader): PromFamily[] {
  return [...reader.families.values()]
    .filter((f) => f.samples.length > 0)
    .map(({ name, help, type, samples }) => ({ name, help, type, samples }))
}

/**
 * The families of a page, in the order they came. Throws PromTextError naming the first line it
 * could not read (and its number), or when the page is over its limits.
 */
export function parsePromText(text: string, limits: ReadLimits): PromFamily[] {
  const reader = new PageReader(limits)
  readLines(reader, text, { start: 0, n: 0 }, Infinity)
  return familiesOf(reader)
}

/**
 * parsePromText in turns of `linesPerTurn` lines, letting the event loop run between them: a
 * daemon reading pages beside the requests it relays keeps each pause short.
 */
export async function parsePromTextInTurns(
  text: string,
  limits: ReadLimits,
  linesPerTurn = 200,
): Promise<PromFamily[]> {
  const reader = new PageReader(limits)
  const at = { start: 0, n: 0 }
  while (readLines(reader, text, at, linesPerTurn)) await new Promise((r) => setImmediate(r))
  return familiesOf(reader)
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

/** One series line. */
export function sampleLine(s: PromSample): string {
  const labels = s.labels.length === 0 ? '' : `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`
  return `${s.name}${labels} ${formatValue(s.value)}`
}

/** A family as text: HELP and TYPE once, then its series. */
export function renderFamily(f: PromFamily): string {
  const help = (f.help ?? f.name).replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
  const lines = [`# HELP ${f.name} ${help}`, `# TYPE ${f.name} ${f.type}`]
  for (const s of f.samples) lines.push(sampleLine(s))
  return lines.join('\n') + '\n'
}
