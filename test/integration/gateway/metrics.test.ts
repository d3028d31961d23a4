import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRig, waitFor, type GatewayRig } from './setup'
import { hardwareSnapshot } from '../../../src-main/contract/nodes'

const METRICS_TOKEN = 'prometheus-scrape-token-0123'
let rig: GatewayRig
let secret: string

const scrape = (token?: string): Promise<Response> =>
  fetch(`${rig.daemon.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} })

let lastText = ''

const engineMetrics = (): { scrape(): Promise<void> } =>
  (
    rig.daemon.core.modules.find((m) => m.name === 'models') as unknown as {
      engineMetrics: { scrape(): Promise<void> }
    }
  ).engineMetrics

/** Problems promtool reports (null when it is not installed: Debian's `prometheus` package has it). */
function promtool(text: string): string[] | null {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  if (r.error !== undefined) return null
  expect(r.status === 0 || r.status === 3, r.stderr).toBe(true)
  return `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '')
}
async function families(): Promise<Map<string, PromFamily>> {
  const res = await scrape(METRICS_TOKEN)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/plain')
  lastText = await res.text()
  return new Map(parsePrometheusTextFormat(lastText).map((f) => [f.name, f]))
}

/** A histogram's labelled _count, read from the text (the parser drops labels of histogram series). */
function histogramCount(name: string, labelText: string): number | null {
  const line = lastText.split('\n').find((l) => l.startsWith(`${name}_count{`) && l.includes(labelText))
  return line ? Number(line.split(' ').pop()) : null
}

const EXPECTED: [string, PromFamily['type']][] = [
  ['tandem_node_up', 'GAUGE'],
  ['tandem_node_load1', 'GAUGE'],
  ['tandem_node_memory_used_bytes', 'GAUGE'],
  ['tandem_node_disk_used_bytes', 'GAUGE'],
  ['tandem_node_gpu_utilization_ratio', 'GAUGE'],
  ['tandem_node_gpu_temperature_celsius', 'GAUGE'],
  ['tandem_node_gpu_power_watts', 'GAUGE'],
  ['tandem_node_gpu_memory_used_bytes', 'GAUGE'],
  ['tandem_node_gpu_unified_memory', 'GAUGE'],
  ['tandem_service_up', 'GAUGE'],
  ['tandem_service_container_restarts', 'GAUGE'],
  ['tandem_deep_health_checks_total', 'COUNTER'],
  ['tandem_deep_health_restarts_total', 'COUNTER'],
  ['tandem_swaps_total', 'COUNTER'],
  ['tandem_swap_duration_seconds', 'HISTOGRAM'],
  ['tandem_download_bytes_total', 'COUNTER'],
  ['tandem_gateway_requests_total', 'COUNTER'],
  ['tandem_gateway_request_duration_seconds', 'HISTOGRAM'],
  ['tandem_gateway_ttft_seconds', 'HISTOGRAM'],
  ['tandem_gateway_prompt_tokens_total', 'COUNTER'],
  ['tandem_gateway_completion_tokens_total', 'COUNTER'],
  ['tandem_gateway_streams_open', 'GAUGE'],
  ['tandem_licensing_sales_total', 'COUNTER'],
  ['tandem_licensing_revenue_sats_total', 'COUNTER'],
  ['tandem_licensing_licenses', 'GAUGE'],
  ['tandem_licensing_validations_total', 'COUNTER'],
  ['tandem_licensing_webhook_deliveries', 'GAUGE'],
  ['tandem_licensing_subscriptions', 'GAUGE'],
]

function sample(f: PromFamily | undefined, labels: Record<string, string>): number | null {
  const m = f?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
  if (!m) return null
  return Number(m.value ?? m.count)
}

beforeAll(async () => {
  rig = await startRig({ METRICS_TOKEN })
  const res = await rig.daemon.admin('/api/consumer-keys', {
    method: 'POST',
    body: JSON.stringify({ name: 'grafana test' }),
  })
  secret = ((await res.json()) as { secret: string }).secret
})
afterAll(() => rig.stop())

describe('/metrics', () => {
  it('is never open: 401 without a credential, with a wrong one (counted) and with a consumer key', async () => {
    expect((await scrape()).status).toBe(401)
    const before = rig.daemon.core.limits.peek('credential', '127.0.0.1').remaining
    expect((await scrape('not-the-metrics-token')).status).toBe(401)
    expect(rig.daemon.core.limits.peek('credential', '127.0.0.1').remaining).toBe(before - 1)
    expect((await scrape(secret)).status).toBe(401)
    rig.daemon.core.limits.reset('credential', '127.0.0.1')
  })

  it('answers the METRICS_TOKEN bearer and the admin credential', async () => {
    expect((await scrape(METRICS_TOKEN)).status).toBe(200)
    expect((await scrape(rig.daemon.adminToken)).status).toBe(200)
  })

  it('exposes every metric with Prometheus names and types, parsed by the text-format parser', async () => {
    const { core } = rig.daemon
    const gpu = {
      name: 'GB10',
      utilization_pct: 87,
      temperature_c: 61,
      power_w: 92.5,
      memory_used_bytes: 4e10,
      memory_total_bytes: 1.2e11,
      memory_fraction: 0.33,
      processes: [],
    }
    const ok = {
      status: 'ok' as const,
      host: '127.0.0.1',
      hostname: 'spark',
      uptime_s: 100,
      load: [1.5, 1, 0.5],
      cores: 20,
      ram: { total_bytes: 1.2e11, used_bytes: 6e10, available_bytes: 6e10 },
      disk: { mount: '/', total_bytes: 4e12, used_bytes: 1e12, available_bytes: 3e12 },
      gpu,
      gpu_unified_memory: true,
      memory_pool: null,
      interface: 'eth0',
      mac: null,
      cluster_ip: null,
      probed_at: 1,
      probe_ms: 5,
    }
    core.events.publish(
      'hardware.snapshot',
      hardwareSnapshot(
        { ...ok, node: 'node1' },
        {
          node: 'node2',
          status: 'unreachable',
          host: '127.0.0.2',
          error: 'refused',
          error_kind: 'unreachable',
          port: 22,
          mac: null,
          probed_at: 1,
        },
        [],
        1,
      ),
    )
    core.events.publish('deephealth.result', {
      service: 'asr',
      ok: false,
      at: 1,
      latency_ms: null,
      error: 'CUDA error',
      note: null,
      wedged: true,
      restart: { requested: true, done: true, held_by: null, detail: null },
    })
    await (
      await fetch(`${rig.daemon.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({
          model: 'sim/Qwen3-8B-Instruct',
          stream: true,
          messages: [{ role: 'user', content: 'a b c' }],
        }),
      })
    ).text()
    await rig.daemon.admin('/v1/validate', { method: 'POST', body: JSON.stringify({ key: 'LIC1-NOTAKEY-XX' }) })
    const gw = rig.daemon.core.modules.find((m) => m.name === 'gateway') as unknown as {
      requestLog: { totalCount: number }
    }
    await waitFor(() => gw.requestLog.totalCount >= 1)

    const fams = await families()
    for (const [name, type] of EXPECTED) {
      expect(fams.get(name)?.type, name).toBe(type)
    }
    for (const [name, f] of fams) {
      // The engines' own families keep vLLM's names (federated below); Tandem's follow its rules.
      if (name.startsWith('vllm:')) continue
      expect(name).toMatch(/^tandem_[a-z0-9_]+$/)
      if (f.type === 'COUNTER') expect(name).toMatch(/_total$/)
      if (f.type !== 'COUNTER') expect(name).not.toMatch(/_total$/)
      expect(name).not.toMatch(/_(ms|milliseconds|percent|kb|mb|gb)(_|$)/)
    }
    expect(sample(fams.get('tandem_node_gpu_utilization_ratio'), { node: 'node1' })).toBeCloseTo(0.87)
    expect(sample(fams.get('tandem_node_up'), { node: 'node2' })).toBe(0)
    expect(sample(fams.get('tandem_deep_health_checks_total'), { service: 'asr', result: 'wedged' })).toBe(1)
    expect(
      sample(fams.get('tandem_gateway_requests_total'), {
        route: '/v1/chat/completions',
        status: '200',
        key: 'grafana test',
      }),
    ).toBe(1)
    expect(histogramCount('tandem_gateway_ttft_seconds', 'key="grafana test"')).toBe(1)
    expect(
      sample(fams.get('tandem_gateway_completion_tokens_total'), { key: 'grafana test', estimated: 'false' }),
    ).toBe(5)
    expect(sample(fams.get('tandem_licensing_validations_total'), {})).toBeGreaterThanOrEqual(1)
  })

  it('feeds every metric the Grafana dashboard queries, in cluster, gateway, engines and shop rows', async () => {
    const dash = JSON.parse(fs.readFileSync(path.resolve('resources/grafana/tandem.json'), 'utf8')) as {
      panels: { type: string; title: string; targets?: { expr: string }[] }[]
    }
    expect(dash.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'Cluster',
      'Gateway',
      'Engines',
      'Shop',
    ])
    await engineMetrics().scrape()
    const fams = await families()
    const used = new Set(
      dash.panels
        .flatMap((p) => p.targets ?? [])
        .flatMap((t) => t.expr.match(/(tandem_[a-z0-9_]+|vllm:[a-z0-9_:]+)/g) ?? [])
        .map((n) => n.replace(/_(bucket|count|sum)$/, '')),
    )
    expect(used.size).toBeGreaterThan(25)
    expect([...used].filter((n) => n.startsWith('vllm:')).length).toBeGreaterThanOrEqual(4)
    for (const name of used) expect(fams.has(name), name).toBe(true)
  })

  it('federates the placement engine’s own families with placement, node and model labels', async () => {
    await engineMetrics().scrape()
    const fams = await families()
    const running = fams.get('vllm:num_requests_running')
    expect(running?.type).toBe('GAUGE')
    expect(running?.metrics[0]?.labels).toMatchObject({
      placement: 'node1',
      node: 'node1',
      model_name: 'sim/Qwen3-8B-Instruct',
      engine: '0',
    })
    expect(sample(fams.get('tandem_engine_up'), { placement: 'node1' })).toBe(1)
    // The kept families only, unless ENGINE_METRICS_FAMILIES=all.
    expect(fams.has('vllm:cache_config_info')).toBe(false)
    expect(fams.has('python_gc_objects_collected_total')).toBe(false)
    const problems = promtool(lastText)
    if (problems !== null)
      for (const p of problems)
        expect(p).toMatch(
          /^vllm:\S+ (metric names should not contain ':'|non-counter metrics should not have "_total" suffix)$/,
        )
    const load = await rig.daemon.admin('/api/placements/engine-load')
    expect(load.status).toBe(200)
    const view = (await load.json()) as {
      interval_s: number
      placements: { placement: string; state: string; running: number }[]
    }
    expect(view.interval_s).toBe(15)
    expect(view.placements[0]).toMatchObject({ placement: 'node1', state: 'ok', running: 0 })
  })
})
