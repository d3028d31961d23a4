import { renderFamily, type PromFamily, type PromSample } from '../lib/promText'

/**
 * The engines' own families in Tandem's /metrics (docs/observability.md, Engine metrics): each
 * placement's page with `placement`, `node` and `model` added, merged family by family so the whole
 * document has each family's HELP and TYPE once. What the engines' pages hold is theirs; Tandem
 * only relabels, merges and drops what would make the document invalid.
 */

/** One engine's last good page, as the models domain hands it over. */
export interface EnginePage {
  readonly placement: string
  readonly node: string
  readonly model: string
  /** Whether the last scrape of this engine succeeded; false: no families. */
  readonly up: boolean
  /** How long the last scrape took (null: none finished yet). */
  readonly scrapeSeconds: number | null
  readonly families: readonly PromFamily[]
}

/** The labels Tandem adds; an engine's own label of the same name is kept as `exported_<name>`. */
export const ADDED_LABELS = ['placement', 'node', 'model'] as const

/** What was left out of the document, and why (for the log and the tests). */
export interface Dropped {
  readonly placement: string
  readonly family: string
  readonly reason: string
}

/** An engine's label renamed out of the way of the added ones, as Prometheus's federation does. */
function exportedName(name: string, taken: ReadonlySet<string>): string {
  let out = name
  while (taken.has(out)) out = `exported_${out}`
  return out
}

function relabel(s: PromSample, added: readonly (readonly [string, string])[]): PromSample {
  const taken = new Set<string>(ADDED_LABELS)
  for (const [k] of s.labels) taken.add(k)
  const own = s.labels.map(([k, v]): [string, string] => {
    if (!(ADDED_LABELS as readonly string[]).includes(k)) return [k, v]
    const renamed = exportedName(`exported_${k}`, taken)
    taken.add(renamed)
    return [renamed, v]
  })
  // `le` and `quantile` stay last, where readers of the text expect them.
  const tail = own.filter(([k]) => k === 'le' || k === 'quantile')
  const head = own.filter(([k]) => k !== 'le' && k !== 'quantile')
  return { name: s.name, labels: [...added, ...head, ...tail], value: s.value }
}

/** Series names a family writes (a histogram's _bucket, _sum, _count), so no two families share one. */
function seriesNames(f: PromFamily): string[] {
  if (f.type === 'histogram') return [`${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`]
  if (f.type === 'summary') return [f.name, `${f.name}_sum`, `${f.name}_count`]
  return [f.name]
}

function ownFamilies(pages: readonly EnginePage[]): PromFamily[] {
  const up: PromSample[] = []
  const took: PromSample[] = []
  for (const p of pages) {
    const labels: [string, string][] = [
      ['placement', p.placement],
      ['node', p.node],
      ['model', p.model],
    ]
    up.push({ name: 'tandem_engine_up', labels, value: p.up ? 1 : 0 })
    if (p.scrapeSeconds !== null)
      took.push({ name: 'tandem_engine_scrape_duration_seconds', labels, value: p.scrapeSeconds })
  }
  return [
    {
      name: 'tandem_engine_up',
      help: 'Whether the placement engine answered its last metrics scrape (1) or not (0)',
      type: 'gauge',
      samples: up,
    },
    {
      name: 'tandem_engine_scrape_duration_seconds',
      help: 'How long the last scrape of the placement engine took',
      type: 'gauge',
      samples: took,
    },
  ]
}

/**
 * The federated families as text, after Tandem's own (whose names are `reserved`): one family per
 * name across every engine, the first engine (by placement id) deciding its type and HELP; a family
 * another engine gives another type is dropped for that engine, and so is one named like Tandem's.
 */
export function federate(
  pages: readonly EnginePage[],
  reserved: ReadonlySet<string>,
): { text: string; dropped: Dropped[] } {
  const sorted = [...pages].sort((a, b) => a.placement.localeCompare(b.placement))
  const merged = new Map<string, PromFamily>()
  const series = new Map<string, string>()
  const dropped: Dropped[] = []
  const own = ownFamilies(sorted)
  for (const f of own) for (const n of seriesNames(f)) series.set(n, f.name)
  for (const page of sorted) {
    const added: [string, string][] = [
      ['placement', page.placement],
      ['node', page.node],
      ['model', page.model],
    ]
    for (const f of page.families) {
      const why = refusal(f, merged, series, reserved)
      if (why !== null) {
        dropped.push({ placement: page.placement, family: f.name, reason: why })
        continue
      }
      let into = merged.get(f.name)
      if (into === undefined) {
        into = { name: f.name, help: f.help, type: f.type, samples: [] }
        merged.set(f.name, into)
        for (const n of seriesNames(f)) series.set(n, f.name)
      }
      for (const s of f.samples) into.samples.push(relabel(s, added))
    }
  }
  const families = [...own.filter((f) => f.samples.length > 0), ...merged.values()]
  return { text: families.map(renderFamily).join(''), dropped }
}

function refusal(
  f: PromFamily,
  merged: ReadonlyMap<string, PromFamily>,
  series: ReadonlyMap<string, string>,
  reserved: ReadonlySet<string>,
): string | null {
  if (reserved.has(f.name) || f.name.startsWith('tandem_')) return 'named like one of Tandem’s own families'
  const before = merged.get(f.name)
  if (before !== undefined)
    return before.type === f.type ? null : `a ${f.type} here, a ${before.type} on an engine before it`
  for (const n of seriesNames(f)) {
    const owner = series.get(n)
    if (owner !== undefined) return `its series ${n} belong to family ${owner}`
  }
  return null
}
