import { describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { LauncherCheckout } from '../../../src-main/updates/checkout'
import { explainPrompt, UpdateExplainer, type ExplainDeps } from '../../../src-main/updates/explain'

const logger = createLogger({ sink: new MemorySink() })
const calls: string[] = []
const pool = {
  exec: async (_t: unknown, command: string) => {
    calls.push(command)
    return { code: 0, signal: null, stdout: '', stderr: '' }
  },
}
const checkout = new LauncherCheckout({
  pool,
  node1: { host: '127.0.0.1', user: 'spark', port: 22 },
  launcherDir: '$HOME/spark-vllm-docker',
  clock: systemClock,
  logger,
})
const explainer = (over: Partial<ExplainDeps>): UpdateExplainer =>
  new UpdateExplainer({
    checkout,
    pool,
    llmBaseUrl: () => 'http://127.0.0.1:9',
    loaded: () => ({ served: 'm' }),
    swapBusy: () => false,
    logger,
    ...over,
  })

function refusal(f: () => unknown): ApiError {
  try {
    f()
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  throw new Error('expected a refusal')
}

describe('explain-updates refusals (before the stream opens, nothing run)', () => {
  it('no model loaded: 409 saying so', () => {
    const e = refusal(() => explainer({ loaded: () => null }).open(new AbortController().signal))
    expect(e.status).toBe(409)
    expect(e.message).toContain('no model is loaded on the llm')
    expect(calls).toEqual([])
  })

  it('the llm not configured: 503 with what to set', () => {
    const e = refusal(() => explainer({ llmBaseUrl: () => null }).open(new AbortController().signal))
    expect(e.status).toBe(503)
    expect(e.message).toContain('NODE1_HOST')
  })

  it('a swap holding the llm: 409', () => {
    const e = refusal(() => explainer({ swapBusy: () => true }).open(new AbortController().signal))
    expect(e.status).toBe(409)
    expect(e.message).toContain('swap')
  })
})

describe('the explain prompt', () => {
  it('is bounded: at most 60 commits, long subjects cut, the rest counted', () => {
    const pending = Array.from({ length: 150 }, (_, i) => ({
      sha: `${i}`.padStart(40, 'a'),
      subject: `commit ${i} ${'x'.repeat(1000)}`,
      author: 'A',
      date: '2026-01-01T00:00:00Z',
    }))
    const st = {
      ok: true,
      ahead: 0,
      behind: 150,
      dirty: false,
      dirty_files: [],
      current: false,
      branch: 'main',
      pending,
      log: [],
      checked_at: 0,
      error: null,
    }
    const prompt = explainPrompt(st, 'd'.repeat(50_000))
    expect(prompt).toContain('commit 59 ')
    expect(prompt).not.toContain('commit 60 ')
    expect(prompt).toContain('(and 90 older commits)')
    expect(prompt.length).toBeLessThan(60 * 260 + 6000 + 1000)
  })
})
