import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { federate, type EnginePage } from '../../../src-main/metrics/federation'
import { parsePromText, type PromFamily } from '../../../src-main/lib/promText'

const PAGE = fs.readFileSync(path.resolve('test/fixtures/engine-metrics/vllm-v1.prom'), 'utf8')
const families = (text: string): PromFamily[] => parsePromText(text, { maxSamples: 1e6 })

function enginePage(placement: string, text: string, up = true): EnginePage {
  return {
    placement,
    node: placement.split('+')[0]!,
    model: `model-${placement}`,
    up,
    scrapeSeconds: 0.01,
    families: families(text),
  }
}

/** Problems promtool reports (null when it is not installed: Debian's `prometheus` package has it). */
function promtool(text: string): string[] | null {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  if (r.error !== undefined) return null
  // Exit 1 is a document Prometheus cannot read; 3 is lint only.
  expect(r.status === 0 || r.status === 3, r.stderr).toBe(true)
  return `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '')
}

describe('federating the engines’ families into /metrics', () => {
  it('merges each family across engines with its HELP and TYPE once, every series labelled', () => {
    const { text, dropped } = federate([enginePage('node3+node4', PAGE), enginePage('node1', PAGE)], new Set())
    expect(dropped).toEqual([])
    expect(text.match(/^# TYPE vllm:num_requests_running gauge$/gm)).toHaveLength(1)
    expect(text.match(/^# HELP vllm:num_requests_running /gm)).toHaveLength(1)
    // The strict reader refuses a second HELP or TYPE, or a family split in two.
    const back = new Map(families(text).map((f) => [f.name, f]))
    const running = back.get('vllm:num_requests_running')!.samples.map((s) => Object.fromEntries(s.labels))
    expect(running).toEqual([
      { placement: 'node1', node: 'node1', model: 'model-node1', model_name: 'Qwen/Qwen3-8B', engine: '0' },
      { placement: 'node3+node4', node: 'node3', model: 'model-node3+node4', model_name: 'Qwen/Qwen3-8B', engine: '0' },
    ])
    expect(back.get('tandem_engine_up')!.samples.map((s) => s.value)).toEqual([1, 1])
    const bucket = back.get('vllm:time_to_first_token_seconds')!.samples.find((s) => s.name.endsWith('_bucket'))!
    expect(bucket.labels.at(-1)).toEqual(['le', '0.001'])
  })

  it('renames an engine’s own placement and node labels to exported_*, as Prometheus federation does', () => {
    const text =
      '# TYPE vllm:num_requests_running gauge\n' +
      'vllm:num_requests_running{placement="theirs",node="n7",exported_node="x",engine="0"} 2\n'
    const out = federate([enginePage('node1', text)], new Set()).text
    const [s] = families(out).find((f) => f.name === 'vllm:num_requests_running')!.samples
    expect(Object.fromEntries(s!.labels)).toEqual({
      placement: 'node1',
      node: 'node1',
      model: 'model-node1',
      exported_placement: 'theirs',
      exported_exported_node: 'n7',
      exported_node: 'x',
      engine: '0',
    })
    expect(promtool(out)?.filter((l) => !l.includes('should not contain'))).toEqual([])
  })

  it('drops a family another engine sends with another type, and one named like Tandem’s own', () => {
    const other =
      '# HELP vllm:num_requests_running other\n# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 9\n' +
      '# TYPE tandem_node_up gauge\ntandem_node_up 1\n# TYPE my_gauge gauge\nmy_gauge 1\n'
    const { text, dropped } = federate(
      [enginePage('node1', PAGE), enginePage('node2', other)],
      new Set(['tandem_node_up', 'my_gauge']),
    )
    expect(dropped.map((d) => [d.placement, d.family])).toEqual([
      ['node2', 'vllm:num_requests_running'],
      ['node2', 'tandem_node_up'],
      ['node2', 'my_gauge'],
    ])
    expect(dropped[0]!.reason).toBe('a counter here, a gauge on an engine before it')
    const running = families(text).find((f) => f.name === 'vllm:num_requests_running')!
    expect(running.type).toBe('gauge')
    expect(running.samples.every((s) => s.labels[0]![1] === 'node1')).toBe(true)
  })

  it('exposes no series of an engine that is down, only its tandem_engine_up 0', () => {
    const down = { ...enginePage('node1', PAGE), up: false, families: [] }
    const { text } = federate([down], new Set())
    expect(text).not.toMatch(/^vllm:/m)
    expect(text).toMatch(/^tandem_engine_up\{placement="node1",node="node1",model="model-node1"\} 0$/m)
  })

  it('is a document promtool reads, with only vLLM’s own names linted', () => {
    const { text } = federate([enginePage('node1', PAGE), enginePage('node2', PAGE)], new Set())
    const problems = promtool(text)
    if (problems === null) return // promtool not installed: the strict reader above still checks the document
    for (const p of problems)
      expect(p).toMatch(
        /^vllm:\S+ (metric names should not contain ':'|non-counter metrics should not have "_total" suffix)$/,
      )
  })
})
