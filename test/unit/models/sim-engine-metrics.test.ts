import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeLlm, type FakeLlm } from '../../sim/http'
import { parsePromText, type PromFamily } from '../../../src-main/lib/promText'
import { pageFigures } from '../../../src-main/models/engineReadings'

let llm: FakeLlm
beforeAll(async () => {
  llm = await startFakeLlm({ model: 'Qwen/Qwen3-8B', chunkDelayMs: 30 })
})
afterAll(() => llm.close())

async function page(): Promise<PromFamily[]> {
  const res = await fetch(`${llm.url}/metrics`)
  expect(res.headers.get('content-type')).toContain('text/plain')
  return parsePromText(await res.text(), { maxSamples: 100_000 })
}
const series = (fams: PromFamily[], name: string): number =>
  fams.find((f) => f.name === name)!.samples.find((s) => s.name === name || s.name === `${name}_count`)!.value

describe('the simulated engine’s /metrics', () => {
  it('serves vLLM’s page whose figures move with the requests it serves', async () => {
    const before = await page()
    expect(before.map((f) => f.name)).toContain('vllm:kv_cache_usage_perc')
    expect(pageFigures(before)).toMatchObject({ running: 0, waiting: 0, generationTokens: 0 })
    const stream = await fetch(`${llm.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'Qwen/Qwen3-8B',
        stream: true,
        messages: [{ role: 'user', content: 'one two three four five' }],
      }),
    })
    const reader = stream.body!.getReader()
    await reader.read()
    const during = pageFigures(await page())
    expect(during.running).toBe(1)
    expect(during.kvCache).toBeGreaterThan(0)
    while (!(await reader.read()).done);
    const after = await page()
    const figures = pageFigures(after)
    expect(figures).toMatchObject({ running: 0, waiting: 0, generationTokens: 7 })
    expect(series(after, 'vllm:time_to_first_token_seconds')).toBe(1)
    expect(series(after, 'vllm:prompt_tokens_total')).toBe(5)
    const model = after.find((f) => f.name === 'vllm:num_requests_running')!.samples[0]!.labels
    expect(model).toContainEqual(['model_name', 'Qwen/Qwen3-8B'])
  })

  it('starts its counters again when it loads another model (a new engine)', async () => {
    await llm.load('Qwen/Qwen3-14B')
    const fams = await page()
    expect(pageFigures(fams).generationTokens).toBe(0)
    expect(fams[0]!.samples.length).toBeGreaterThan(0)
  })
})
