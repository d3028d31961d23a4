import { createParser } from 'eventsource-parser'
import type { z } from 'zod'
import { ApiError } from '../contract/errors'
import type { ExplainChunk } from '../contract/services'
import { httpCall } from '../lib/httpClient'
import type { Logger } from '../lib/logger'
import type { SshPool } from '../ssh/pool'
import { shq } from '../ssh/quote'
import { UPSTREAM, type LauncherCheckout, type UpdateStatusView } from './checkout'
import { ReasoningSplitter, type ChatDelta } from './reasoning'

type Chunk = z.infer<typeof ExplainChunk>

/** Bounds on what the llm is given: it may be a small model with a short context. */
const MAX_COMMITS_IN_PROMPT = 60
const MAX_SUBJECT_CHARS = 200
const MAX_DIFFSTAT_CHARS = 6000
const MAX_ANSWER_TOKENS = 1200
const MODELS_TIMEOUT_MS = 5000

export interface ExplainDeps {
  readonly checkout: LauncherCheckout
  readonly pool: Pick<SshPool, 'exec'>
  /** The llm's base URL (ServiceDirectory); null when not configured. */
  readonly llmBaseUrl: () => string | null
  /** What the llm serves as far as the swap manager knows; null when nothing is loaded. */
  readonly loaded: () => { served: string } | null
  readonly swapBusy: () => boolean
  readonly logger: Logger
}

/** The loaded llm's explanation of the pending launcher commits, reasoning apart from the answer. */
export class UpdateExplainer {
  constructor(private readonly deps: ExplainDeps) {}

  /** Refuses before the stream opens (a clear status) when no llm can answer; then streams. */
  open(signal: AbortSignal): AsyncIterable<Chunk> {
    const base = this.deps.llmBaseUrl()
    if (base === null) throw new ApiError('unavailable', 'the llm is not configured: set NODE1_HOST and NODE1_USER')
    if (this.deps.swapBusy())
      throw new ApiError('conflict', 'a model swap is in progress; ask for the explanation when it is loaded')
    if (this.deps.loaded() === null) throw noModel()
    return this.stream(base, signal)
  }

  private async *stream(base: string, signal: AbortSignal): AsyncGenerator<Chunk> {
    const st = await this.deps.checkout.status(signal)
    if (!st.ok && st.pending.length === 0 && st.error) throw new ApiError('upstream_unreachable', st.error)
    // The status said a model was loaded; the llm itself has the last word.
    const model = await servedModel(base, signal)
    if (st.pending.length === 0) {
      yield { type: 'answer', text: 'The launcher checkout is up to date: there are no pending commits to explain.' }
      yield { type: 'done', model, commits: 0 }
      return
    }
    const diffstat = await this.diffstat(signal)
    const res = await httpCall(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({
        model,
        stream: true,
        max_tokens: MAX_ANSWER_TOKENS,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: explainPrompt(st, diffstat) },
        ],
      }),
      signal,
    }).catch((err: unknown) => {
      throw new ApiError('upstream_unreachable', `the llm could not be reached: ${errText(err)}`)
    })
    if (!res.ok) {
      const text = (await res.text(64 * 1024).catch(() => '')).slice(0, 300)
      if (res.status === 404) throw noModel()
      throw new ApiError('upstream_error', `the llm answered HTTP ${res.status}${text ? `: ${text}` : ''}`)
    }
    yield* splitStream(res.body)
    yield { type: 'done', model, commits: st.pending.length }
  }

  private async diffstat(signal: AbortSignal): Promise<string> {
    const node1 = this.deps.checkout.node1
    if (!node1) return ''
    const cmd = `${this.deps.checkout.cdLine()}\ngit diff --no-color --stat=120 ${shq(`HEAD...${UPSTREAM}`)} 2>/dev/null | tail -n 80`
    try {
      const r = await this.deps.pool.exec(node1, cmd, { timeoutMs: 20_000, signal })
      return r.stdout.slice(-MAX_DIFFSTAT_CHARS)
    } catch (err) {
      this.deps.logger.warn('diffstat of the pending commits failed', { error: errText(err) })
      return ''
    }
  }
}

const SYSTEM_PROMPT =
  'You explain upstream changes of a vLLM launcher (Docker build and cluster launch scripts) to the operator ' +
  'of a two-node GPU cluster. Be brief and concrete: what changes, what it means for running models, ' +
  'and whether rebuilding the llm container is worth it now.'

/** Subjects and the diffstat, bounded. */
export function explainPrompt(st: UpdateStatusView, diffstat: string): string {
  const shown = st.pending.slice(0, MAX_COMMITS_IN_PROMPT)
  const lines = shown.map(
    (c) => `- ${c.sha.slice(0, 10)} ${c.subject.slice(0, MAX_SUBJECT_CHARS)} (${c.author}, ${c.date})`,
  )
  const more = st.pending.length - shown.length
  return [
    `The launcher checkout is ${st.behind} commit${st.behind === 1 ? '' : 's'} behind ${UPSTREAM}. Pending commits, newest first:`,
    ...lines,
    ...(more > 0 ? [`(and ${more} older commits)`] : []),
    '',
    'Files changed (git diff --stat):',
    diffstat.trim() === '' ? '(not available)' : diffstat.trim().slice(-MAX_DIFFSTAT_CHARS),
    '',
    'Explain what these updates change and whether to apply them.',
  ].join('\n')
}

/** Reads an OpenAI-compatible SSE body into reasoning and answer pieces. */
export async function* splitStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<Chunk> {
  const splitter = new ReasoningSplitter()
  let pending: Chunk[] = []
  const parser = createParser({
    onEvent: (event) => {
      if (event.data === '[DONE]') return
      let delta: ChatDelta | undefined
      try {
        const parsed = JSON.parse(event.data) as { choices?: { delta?: ChatDelta }[] }
        delta = parsed.choices?.[0]?.delta
      } catch {
        return
      }
      if (delta) pending.push(...splitter.feed(delta))
    },
  })
  // A multi-byte character may be split across network chunks: the decoder holds its first bytes back.
  const decoder = new TextDecoder()
  for await (const c of body) {
    parser.feed(decoder.decode(c, { stream: true }))
    const out = pending
    pending = []
    yield* out
  }
  parser.feed(decoder.decode())
  yield* pending
  yield* splitter.flush()
}

async function servedModel(base: string, signal: AbortSignal): Promise<string> {
  try {
    const res = await httpCall(`${base}/v1/models`, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(MODELS_TIMEOUT_MS)]),
    })
    const body = (await res.json()) as { data?: { id?: unknown }[] }
    const id = body.data?.[0]?.id
    if (res.ok && typeof id === 'string') return id
  } catch (err) {
    if (signal.aborted) throw err
  }
  throw noModel()
}

function noModel(): ApiError {
  return new ApiError('conflict', 'no model is loaded on the llm: load one in Models, then ask again')
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
