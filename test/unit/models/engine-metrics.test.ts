import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { EngineMetrics, type EngineTarget } from '../../../src-main/models/engineMetrics'
import { createLogger, Redactor } from '../../../src-main/lib/logger'
import { parsePromText } from '../../../src-main/lib/promText'

const PAGE = fs.readFileSync(path.resolve('test/fixtures/engine-metrics/vllm-v1.prom'), 'utf8')
const logger = createLogger({ redactor: new Redactor(), level: 'error' })

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void

/** A loopback engine whose /metrics answer the test sets. */
async function engine(answer: Answer): Promise<{ url: string; set(a: Answer): void; close(): Promise<void> }> {
  let current = answer
  const sockets = new Set<import('node:net').Socket>()
  const server = http.createServer((req, res) => current(req, res))
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    set: (a) => (current = a),
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise((r) => server.close(() => r()))
    },
  }
}

const page =
  (text: string): Answer =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
    res.end(text)
  }

/** The fixture with its generation counter and TTFT histogram replaced. */
function pageWith(generation: number, ttftCounts?: (le: string) => number): string {
  return PAGE.split('\n')
    .map((l) => {
      if (l.startsWith('vllm:generation_tokens_total{')) return l.replace(/ [^ ]+$/, ` ${generation}.0`)
      const m = /^vllm:time_to_first_token_seconds_bucket\{.*le="([^"]+)"\} /.exec(l)
      if (m && ttftCounts) return l.replace(/ [^ ]+$/, ` ${ttftCounts(m[1]!)}.0`)
      return l
    })
    .join('\n')
}

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!()
})

function rig(
  targets: () => EngineTarget[],
  opts: Partial<{ keepAll: boolean; timeoutMs: number; maxBytes: number }> = {},
) {
  let now = 1_000_000
  const metrics = new EngineMetrics({
    targets,
    now: () => now,
    logger,
    intervalMs: 15_000,
    keepAll: opts.keepAll ?? false,
    timeoutMs: opts.timeoutMs,
    maxBytes: opts.maxBytes,
  })
  return { metrics, advance: (ms: number) => (now += ms) }
}

const target = (url: string, placement = 'node1'): EngineTarget => ({
  placement,
  node: 'node1',
  model: 'qwen3-8b',
  baseUrl: url,
})

describe('reading each placement engine’s own /metrics', () => {
  it('reads the recorded vLLM page: running, waiting, KV cache and the kept families only', async () => {
    const e = await engine(page(PAGE))
    closers.push(e.close)
    const { metrics } = rig(() => [target(e.url)])
    await metrics.scrape()
    const [load] = metrics.view().placements
    expect(load).toMatchObject({ placement: 'node1', state: 'ok', running: 3, waiting: 1, error: null })
    expect(load!.kv_cache_pct).toBeCloseTo(23.15)
    expect(load!.prefix_hit_pct).toBeCloseTo((100 * 11264) / 18432)
    const names = metrics.pages()[0]!.families.map((f) => f.name)
    expect(names).toContain('vllm:num_requests_running')
    expect(names).toContain('vllm:time_to_first_token_seconds')
    expect(names).not.toContain('python_gc_objects_collected_total')
    expect(names).not.toContain('vllm:cache_config_info')
    expect(metrics.busy('node1')).toBe(true)
    expect(metrics.busy('node2')).toBe(false)
  })

  it('keeps every family with ENGINE_METRICS_FAMILIES=all', async () => {
    const e = await engine(page(PAGE))
    closers.push(e.close)
    const { metrics } = rig(() => [target(e.url)], { keepAll: true })
    await metrics.scrape()
    expect(metrics.pages()[0]!.families.length).toBe(parsePromText(PAGE, { maxSamples: 1e5 }).length)
  })

  it('refuses a garbage page: the engine is failing, none of its series are exposed, it is not busy', async () => {
    const e = await engine(page(PAGE))
    closers.push(e.close)
    const { metrics, advance } = rig(() => [target(e.url)])
    await metrics.scrape()
    expect(metrics.busy('node1')).toBe(true)
    e.set(page('<html><body>502 Bad Gateway</body></html>\n'))
    advance(15_000)
    await metrics.scrape()
    const [load] = metrics.view().placements
    expect(load).toMatchObject({ state: 'failing', running: null, waiting: null })
    expect(load!.error).toMatch(/line 1/)
    expect(metrics.pages()[0]).toMatchObject({ up: false, families: [] })
    expect(metrics.busy('node1')).toBe(false)
  })

  it('refuses a page that declares one family twice with another type', async () => {
    const twice = `${PAGE}# HELP vllm:num_requests_running again\n# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 4\n`
    const e = await engine(page(twice))
    closers.push(e.close)
    const { metrics } = rig(() => [target(e.url)])
    await metrics.scrape()
    expect(metrics.view().placements[0]!.error).toMatch(/second (HELP|TYPE) for vllm:num_requests_running/)
  })

  it('stops reading a 50 MB page at its bound and says so', async () => {
    let sent = 0
    let closed = false
    const e = await engine((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      const line = 'vllm:num_requests_running{engine="0"} 1\n'.repeat(1024)
      const pump = (): void => {
        while (!closed && sent < 50 * 1024 * 1024) {
          sent += line.length
          if (!res.write(line)) return void res.once('drain', pump)
        }
        res.end()
      }
      res.on('close', () => (closed = true))
      pump()
    })
    closers.push(e.close)
    const { metrics } = rig(() => [target(e.url)], { maxBytes: 1024 * 1024 })
    await metrics.scrape()
    expect(metrics.view().placements[0]!.error).toBe('its /metrics page is over 1048576 bytes')
    expect(sent).toBeLessThan(50 * 1024 * 1024)
  })

  it('gives up on an engine that hangs mid-page, and reads it less often while it fails', async () => {
    let asked = 0
    const e = await engine((_req, res) => {
      asked++
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write(PAGE.slice(0, 500))
    })
    closers.push(e.close)
    const { metrics, advance } = rig(() => [target(e.url)], { timeoutMs: 300 })
    await metrics.scrape()
    expect(metrics.view().placements[0]!.error).toBe('its /metrics did not finish within 0.3 s')
    advance(15_000)
    await metrics.scrape()
    expect(asked).toBe(2)
    // Two failures: the next read waits two intervals.
    advance(15_000)
    await metrics.scrape()
    expect(asked).toBe(2)
    e.set(page(PAGE))
    advance(15_000)
    await metrics.scrape()
    expect(metrics.view().placements[0]).toMatchObject({ state: 'ok', error: null, running: 3 })
  })

  it('stops at once while an engine hangs (a shutdown does not wait for the read’s timeout)', async () => {
    let asked!: () => void
    const reached = new Promise<void>((r) => (asked = r))
    const e = await engine((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write(PAGE.slice(0, 100))
      asked()
    })
    closers.push(e.close)
    const { metrics } = rig(() => [target(e.url)], { timeoutMs: 600_000 })
    metrics.start()
    await reached
    await metrics.stop()
    expect(metrics.view().placements[0]!.state).toBe('failing')
  })

  it('counts from zero again when the engine restarted (its counters went down)', async () => {
    const e = await engine(page(pageWith(1000, (le) => (Number(le) >= 0.25 || le === '+Inf' ? 10 : 0))))
    closers.push(e.close)
    const { metrics, advance } = rig(() => [target(e.url)])
    await metrics.scrape()
    e.set(page(pageWith(1600, (le) => (Number(le) >= 0.25 || le === '+Inf' ? 20 : 0))))
    advance(10_000)
    await metrics.scrape()
    let load = metrics.view().placements[0]!
    expect(load.tokens_per_s).toBe(60)
    // Ten new first tokens, all between 0.1 and 0.25 s: the median is interpolated inside that bucket.
    expect(load.ttft_p50_s).toBeCloseTo(0.175)
    // Restarted: 50 tokens and 2 first tokens (under 0.5 s) since.
    e.set(page(pageWith(50, (le) => (Number(le) >= 0.5 || le === '+Inf' ? 2 : 0))))
    advance(10_000)
    await metrics.scrape()
    load = metrics.view().placements[0]!
    expect(load.tokens_per_s).toBe(5)
    expect(load.ttft_p50_s).toBeCloseTo(0.375)
    expect(load.history.map((h) => h.tokens_per_s)).toEqual([null, 60, 5])
  })

  it('drops a placement removed between two reads at once, and its history with it', async () => {
    const a = await engine(page(PAGE))
    const b = await engine(page(PAGE))
    closers.push(a.close, b.close)
    let targets = [target(a.url, 'node1'), { ...target(b.url, 'node3'), node: 'node3' as const }]
    const { metrics, advance } = rig(() => targets)
    await metrics.scrape()
    expect(metrics.pages().map((p) => p.placement)).toEqual(['node1', 'node3'])
    targets = [targets[0]!]
    expect(metrics.pages().map((p) => p.placement)).toEqual(['node1'])
    expect(metrics.view().placements.map((p) => p.placement)).toEqual(['node1'])
    expect(metrics.busy('node3')).toBe(false)
    // Placed again later: it starts with no history.
    targets = [targets[0]!, { ...target(b.url, 'node3'), node: 'node3' }]
    advance(15_000)
    await metrics.scrape()
    expect(metrics.view().placements[1]!.history).toHaveLength(1)
  })

  it('starts a fresh history when another model is served under the same placement', async () => {
    const e = await engine(page(PAGE))
    closers.push(e.close)
    let model = 'qwen3-8b'
    const { metrics, advance } = rig(() => [{ ...target(e.url), model }])
    await metrics.scrape()
    model = 'gemma-4'
    expect(metrics.pages()).toEqual([])
    advance(15_000)
    await metrics.scrape()
    expect(metrics.view().placements[0]).toMatchObject({ model: 'gemma-4', tokens_per_s: null })
    expect(metrics.view().placements[0]!.history).toHaveLength(1)
  })
})
