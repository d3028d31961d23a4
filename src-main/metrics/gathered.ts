import {
  Counter,
  Histogram,
  type Aggregator,
  type HistogramConfiguration,
  type LabelValues,
  type Registry,
} from 'prom-client'

/*
 * Metrics fed on the gateway's hot path: a relayed request adds to plain maps found by its label
 * values, and prom-client sees the totals only when /metrics is scraped. prom-client's own `inc`
 * and `observe` validate and hash the label object on every call, and a histogram looks its bucket
 * up by the bound turned into a string: together about 10 µs of a relayed request's CPU.
 */

/** At most this many labels per gathered metric (the gateway's have one to three). */
type LabelTuple = readonly [string, string?, string?]

/**
 * Values found by their label values, one map per label. A key joined from the values would be a
 * new string on every request, flattened and hashed to be looked up; a route or key name is a
 * string that already knows its hash.
 */
class ByLabels<T> {
  private readonly top = new Map<string, Map<string, Map<string, T>>>()

  constructor(private readonly make: (values: LabelTuple) => T) {}

  find(a: string, b = '', c = ''): T {
    let second = this.top.get(a)
    if (second === undefined) this.top.set(a, (second = new Map()))
    let third = second.get(b)
    if (third === undefined) second.set(b, (third = new Map()))
    let found = third.get(c)
    if (found === undefined) third.set(c, (found = this.make([a, b, c])))
    return found
  }

  clear(): void {
    this.top.clear()
  }
}

/** The label set prom-client takes, from values given in the order of `names`. */
function labelsOf<L extends string>(names: readonly L[], values: LabelTuple): LabelValues<L> {
  const labels: Partial<Record<L, string>> = {}
  names.forEach((name, i) => (labels[name] = values[i] ?? ''))
  return labels as LabelValues<L>
}

/** Counter increments gathered per label set between scrapes. */
export class PendingCounts<L extends string> {
  private cells: { labels: LabelValues<L>; n: number }[] = []
  private readonly byLabels: ByLabels<{ labels: LabelValues<L>; n: number }>

  /** `labelNames`: the order `add` takes the values in. */
  constructor(readonly labelNames: readonly L[]) {
    this.byLabels = new ByLabels((values) => {
      const cell = { labels: labelsOf(labelNames, values), n: 0 }
      this.cells.push(cell)
      return cell
    })
  }

  /** Adds `n` to the label set of `values` (in the order of `labelNames`). */
  add(n: number, a: string, b?: string, c?: string): void {
    this.byLabels.find(a, b, c).n += n
  }

  flushInto(counter: Counter<L>): void {
    for (const { labels, n } of this.cells) counter.inc(labels, n)
    this.cells = []
    this.byLabels.clear()
  }
}

/** A counter whose increments wait in `pending` until a scrape collects them. */
export function gatheredCounter<L extends string>(
  config: { name: string; help: string; registers: Registry[] },
  pending: PendingCounts<L>,
): Counter<L> {
  return new Counter<L>({
    ...config,
    labelNames: pending.labelNames,
    collect() {
      pending.flushInto(this)
    },
  })
}

interface Series<L extends string> {
  readonly labels: LabelValues<L>
  /** Observations per bucket, not cumulative; the last slot is above every bound. */
  readonly counts: Float64Array
  sum: number
  count: number
}

/** One exported sample, in the shape prom-client's registry formats. */
interface Sample {
  labels: Record<string, string | number>
  sharedLabels: Record<string, string | number>
  value: number
  metricName: string
}

/**
 * A Prometheus histogram counted with `record` into one array per label set, exposed through
 * prom-client's registry under its own name and type. Its exposition is the one prom-client's
 * `Histogram` gives for the same observations (a test compares the two), so dashboards and alert
 * rules cannot tell them apart. Only `record` feeds it.
 */
export class GatheredHistogram<L extends string> extends Histogram<L> {
  private readonly series: ByLabels<Series<L>>
  private readonly all: Series<L>[] = []
  private readonly bounds: readonly number[]
  private readonly meta: { name: string; help: string; aggregator: Aggregator }

  constructor(config: HistogramConfiguration<L> & { buckets: number[]; labelNames: readonly L[] }) {
    super(config)
    this.meta = { name: config.name, help: config.help, aggregator: config.aggregator ?? 'sum' }
    this.bounds = [...config.buckets].sort((a, b) => a - b)
    this.series = new ByLabels((values) => {
      const series = {
        labels: labelsOf(config.labelNames, values),
        counts: new Float64Array(this.bounds.length + 1),
        sum: 0,
        count: 0,
      }
      this.all.push(series)
      return series
    })
    this.observe = () => {
      throw new Error(`${config.name}: a gathered histogram is fed with record()`)
    }
  }

  /** Counts `value` for the label set of `values` (in the order of `labelNames`). Non-finite values are not counted. */
  record(value: number, a: string, b?: string, c?: string): void {
    if (!Number.isFinite(value)) return
    const series = this.series.find(a, b, c)
    const bounds = this.bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    series.counts[i]!++
    series.sum += value
    series.count++
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    if (this.series === undefined) return
    this.series.clear()
    this.all.length = 0
  }

  /**
   * What the registry renders as text (it asks a metric for this before `get`, and prom-client's
   * `Histogram` has one): the bucket bound in `labels`, the series' labels beside it.
   */
  async getForPromString(): Promise<typeof this.meta & { type: 'histogram'; values: Sample[] }> {
    return { ...this.meta, type: 'histogram', values: this.samples() }
  }

  /** The same samples as JSON, the bucket bound among the series' labels (prom-client's `get`). */
  override async get(): Promise<Awaited<ReturnType<Histogram<L>['get']>>> {
    const values = this.samples().map(({ labels, sharedLabels, value, metricName }) => ({
      labels: { ...sharedLabels, ...labels } as LabelValues<L>,
      value,
      metricName,
    }))
    // prom-client's types declare a `collect` and an enum `type` that its own Histogram.get() does not return.
    return { ...this.meta, type: 'histogram', values } as unknown as Awaited<ReturnType<Histogram<L>['get']>>
  }

  private samples(): Sample[] {
    const samples: Sample[] = []
    const { name } = this.meta
    const bucket = `${name}_bucket`
    for (const { labels, counts, sum, count } of this.all) {
      const shared = labels as Record<string, string | number>
      let cumulative = 0
      this.bounds.forEach((le, i) => {
        cumulative += counts[i]!
        samples.push({ labels: { le }, sharedLabels: shared, value: cumulative, metricName: bucket })
      })
      samples.push(
        { labels: { le: '+Inf' }, sharedLabels: shared, value: count, metricName: bucket },
        { labels: {}, sharedLabels: shared, value: sum, metricName: `${name}_sum` },
        { labels: {}, sharedLabels: shared, value: count, metricName: `${name}_count` },
      )
    }
    return samples
  }
}
