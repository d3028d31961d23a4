import {
  Counter,
  Histogram,
  type Aggregator,
  type HistogramConfiguration,
  type LabelValues,
  type Registry,
} from 'prom-client'

/*
 * Metrics fed on the gateway's hot path: a relayed request adds to plain maps keyed by one string,
 * and prom-client sees the totals only when /metrics is scraped. prom-client's own `inc` and
 * `observe` validate and hash the label object on every call, and a histogram looks its bucket up
 * by the bound turned into a string: together about 10 µs of a relayed request's CPU.
 */

/** Counter increments gathered per label set between scrapes. */
export class PendingCounts<L extends string> {
  private readonly pending = new Map<string, { labels: LabelValues<L>; n: number }>()

  add(key: string, labels: () => LabelValues<L>, n: number): void {
    const known = this.pending.get(key)
    if (known) known.n += n
    else this.pending.set(key, { labels: labels(), n })
  }

  flushInto(counter: Counter<L>): void {
    for (const { labels, n } of this.pending.values()) counter.inc(labels, n)
    this.pending.clear()
  }
}

/** A counter whose increments wait in `pending` until a scrape collects them. */
export function gatheredCounter<L extends string>(
  config: { name: string; help: string; labelNames: readonly L[]; registers: Registry[] },
  pending: PendingCounts<L>,
): Counter<L> {
  return new Counter<L>({
    ...config,
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
  private readonly series = new Map<string, Series<L>>()
  private readonly bounds: readonly number[]
  private readonly meta: { name: string; help: string; aggregator: Aggregator }

  constructor(config: HistogramConfiguration<L> & { buckets: number[] }) {
    super(config)
    this.meta = { name: config.name, help: config.help, aggregator: config.aggregator ?? 'sum' }
    this.bounds = [...config.buckets].sort((a, b) => a - b)
    this.observe = () => {
      throw new Error(`${config.name}: a gathered histogram is fed with record()`)
    }
  }

  /** Counts `value` for the label set `key` names; `labels` is asked only the first time. Non-finite values are not counted. */
  record(key: string, labels: () => LabelValues<L>, value: number): void {
    if (!Number.isFinite(value)) return
    let series = this.series.get(key)
    if (!series) {
      series = { labels: labels(), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }
      this.series.set(key, series)
    }
    const bounds = this.bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    series.counts[i]!++
    series.sum += value
    series.count++
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    if (this.series !== undefined) this.series.clear()
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
    for (const { labels, counts, sum, count } of this.series.values()) {
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
