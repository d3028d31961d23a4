import type { Knobs } from '../contract/schemas'

/**
 * Knobs are per-model overrides of a few engine flags (spec 1, 2.3). Applying one strips every
 * spelling of its flag from the entry's args (`--flag value`, `--flag=value`, underscores or
 * hyphens) and appends the knob's value, so a knob always wins over the bundled default.
 */

type KnobName = keyof Knobs

/** A flag the knobs touch, by its canonical (hyphenated) name, and whether it takes a value. */
interface FlagRule {
  readonly flag: string
  readonly takesValue: boolean
  /** For a boolean knob backed by a valued flag: the values that mean "on" (e.g. fp8 for kv-cache-dtype). */
  readonly onValue?: (value: string) => boolean
}

const RULES: Record<KnobName, readonly FlagRule[]> = {
  'max-model-len': [{ flag: 'max-model-len', takesValue: true }],
  'gpu-memory-utilization': [{ flag: 'gpu-memory-utilization', takesValue: true }],
  fastsafetensors: [{ flag: 'load-format', takesValue: true, onValue: (v) => v === 'fastsafetensors' }],
  'prefix-caching': [
    { flag: 'enable-prefix-caching', takesValue: false },
    { flag: 'no-enable-prefix-caching', takesValue: false },
  ],
  'fp8-kv-cache': [{ flag: 'kv-cache-dtype', takesValue: true, onValue: (v) => v.startsWith('fp8') }],
}

/** One flag occurrence in an argument list: where it is, how many tokens it spans, its value. */
interface Occurrence {
  readonly flag: string
  readonly index: number
  readonly span: 1 | 2
  readonly value: string | null
}

/** `--max_model_len=4096` → `max-model-len`; null for anything that is not a long flag. */
function canonicalFlag(token: string): string | null {
  if (!token.startsWith('--') || token.length < 3) return null
  const eq = token.indexOf('=')
  return (eq === -1 ? token.slice(2) : token.slice(2, eq)).replace(/_/g, '-')
}

function occurrences(args: readonly string[], rule: FlagRule): Occurrence[] {
  const found: Occurrence[] = []
  for (let i = 0; i < args.length; i++) {
    const token = args[i] as string
    if (canonicalFlag(token) !== rule.flag) continue
    const eq = token.indexOf('=')
    if (eq !== -1) found.push({ flag: rule.flag, index: i, span: 1, value: token.slice(eq + 1) })
    else if (rule.takesValue && i + 1 < args.length && canonicalFlag(args[i + 1] as string) === null)
      found.push({ flag: rule.flag, index: i, span: 2, value: args[i + 1] as string })
    else found.push({ flag: rule.flag, index: i, span: 1, value: null })
  }
  return found
}

function withoutOccurrences(args: readonly string[], drop: readonly Occurrence[]): string[] {
  const skip = new Set<number>()
  for (const o of drop) for (let k = 0; k < o.span; k++) skip.add(o.index + k)
  return args.filter((_, i) => !skip.has(i))
}

function boolValue(value: string | null): boolean {
  return value === null || !/^(false|0|no|off)$/i.test(value)
}

/** The knob values the args already set, read back from the last occurrence of each flag. */
export function seedKnobs(args: readonly string[]): Knobs {
  const seeded: Knobs = {}
  const last = (rule: FlagRule): Occurrence | undefined => occurrences(args, rule).at(-1)
  const len = last(RULES['max-model-len'][0] as FlagRule)
  if (len?.value && /^\d+$/.test(len.value)) seeded['max-model-len'] = Number(len.value)
  const util = last(RULES['gpu-memory-utilization'][0] as FlagRule)
  if (util?.value && /^(0|1)?\.\d+$/.test(util.value)) seeded['gpu-memory-utilization'] = Number(util.value)
  const load = last(RULES.fastsafetensors[0] as FlagRule)
  if (load?.value) seeded.fastsafetensors = load.value === 'fastsafetensors'
  const kv = last(RULES['fp8-kv-cache'][0] as FlagRule)
  if (kv?.value) seeded['fp8-kv-cache'] = kv.value.startsWith('fp8')
  const prefix = [...RULES['prefix-caching']]
    .flatMap((r) => occurrences(args, r))
    .sort((a, b) => a.index - b.index)
    .at(-1)
  if (prefix) seeded['prefix-caching'] = prefix.flag === 'enable-prefix-caching' && boolValue(prefix.value)
  return seeded
}

/** The args a knob appends for its value ([] when "off" means the engine's default). */
function knobArgs(name: KnobName, value: number | boolean): string[] {
  switch (name) {
    case 'max-model-len':
      return ['--max-model-len', String(value)]
    case 'gpu-memory-utilization':
      return ['--gpu-memory-utilization', String(value)]
    case 'fastsafetensors':
      return value ? ['--load-format', 'fastsafetensors'] : []
    case 'prefix-caching':
      return [value ? '--enable-prefix-caching' : '--no-enable-prefix-caching']
    case 'fp8-kv-cache':
      return value ? ['--kv-cache-dtype', 'fp8'] : []
  }
}

/**
 * The entry's args with the knobs applied. A boolean knob backed by a valued flag, when off,
 * strips only the values that meant "on" (`--load-format instanttensor` survives fastsafetensors=false).
 */
export function knobsToArgs(args: readonly string[], knobs: Knobs): string[] {
  let out = [...args]
  for (const name of Object.keys(RULES) as KnobName[]) {
    const value = knobs[name]
    if (value === undefined) continue
    const drop = RULES[name].flatMap((rule) =>
      occurrences(out, rule).filter((o) => value !== false || !rule.onValue || rule.onValue(o.value ?? '')),
    )
    out = [...withoutOccurrences(out, drop), ...knobArgs(name, value)]
  }
  return out
}

/** The knob values in force: those seeded from the args, then the override's. */
export function effectiveKnobs(args: readonly string[], override: Knobs): Knobs {
  return { ...seedKnobs(args), ...override }
}
