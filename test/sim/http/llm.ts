import type http from 'node:http'
import {
  readBody,
  sendJson,
  startFake,
  writeChunks,
  type FakeContext,
  type FakeOptions,
  type FakeServer,
} from './common'
import { SimEngineMetrics } from './vllmMetrics'

/**
 * A fake OpenAI-compatible llm (the shape vLLM serves): `/v1/models`, `/v1/chat/completions` and
 * `/v1/completions`, streaming or not. The answer is deterministic: it echoes the prompt's words
 * (or `max_tokens` words of a fixed text), one SSE chunk per token.
 */
export interface FakeLlmOptions extends FakeOptions {
  /**
   * The loaded model; null = the engine is up but has no model (empty list). Several names joined by
   * commas are `--served-model-name a b`: all listed and answered, the first in every answer.
   */
  model?: string | null
  /**
   * As an engine started with `--enable-force-include-usage` (every engine Tandem launches): every
   * stream carries the running usage on each event and a last usage event, asked or not. Default on.
   */
  forceUsage?: boolean
  /** Delay before each streamed chunk (ms). */
  chunkDelayMs?: number
  /** Delay before a stream's first chunk on top of chunkDelayMs (ms): an engine's prefill. */
  prefillMs?: number
  /** How long loading a model takes (ms); 0 = at once. */
  loadDelayMs?: number
}

export interface FakeLlm extends FakeServer {
  setModel(model: string | null): void
  /**
   * The engine loads `model`, as `vllm serve` does: nothing answers while it loads (connections are
   * refused), then it serves the model, or, when loads are set to fail, it logs the error and stays
   * down. Resolves when the load has ended either way. `failure` makes this load fail with that
   * message whatever failLoads says (a model that cannot fit the layout it was launched with).
   */
  load(model: string, failure?: string): Promise<void>
  /** The engine is gone (its container stopped): a load in progress never completes, nothing is served. */
  unload(): void
  setLoadDelay(ms: number): void
  /** Loads of `model` ('*': every model) fail from now on, with `message` in the log; null: none fail. */
  failLoads(model: string | null, message?: string): void
  /** Loads wait for releaseLoads() (tests wait for observable state, never for time). */
  holdLoads(on: boolean): void
  releaseLoads(): void
  /** The model being loaded now, or null. */
  readonly loading: string | null
  /** Where the engine's log lines go (the llm container's log). */
  setEngineLog(write: ((line: string) => void) | null): void
  /**
   * Streamed chat answers start with reasoning: 'field' sends it as `reasoning_content` deltas (vLLM's
   * reasoning parser), 'think' inside `<think>…</think>` in the content, the tags split across chunks.
   */
  setReasoning(mode: 'off' | 'field' | 'think'): void
  /** The last chat or completion request's body (what a caller asked). */
  readonly lastRequest: unknown
  /** Streams never send usage, even when `stream_options.include_usage` asks or it is forced (some engines). */
  setStreamUsage(on: boolean): void
  /** Whether usage is forced into every stream (FakeLlmOptions.forceUsage). */
  setForceUsage(on: boolean): void
  /** What its /metrics serves (vLLM's page, moved by the requests it serves). */
  readonly engineMetrics: SimEngineMetrics
}

/** The reasoning the fake thinks before it answers (with setReasoning). */
export const SIM_REASONING = ['Let', ' me', ' read', ' the', ' commits', ' first.']

/** What vLLM logs when it cannot bring the engine up (deep health matches the last line too). */
export const LOAD_FAILURE = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB'

/** Why a `serve` the sim announces will fail to load, by the reason the container's vLLM gave. */
export const SERVE_FAILURES: Readonly<Record<string, string>> = {
  // The weights of a model that needs both nodes do not fit one GB10's memory.
  oom: LOAD_FAILURE,
}

const FILLER =
  'The quick brown fox jumps over the lazy dog while the cluster hums along and every token arrives on time'.split(' ')

interface ChatBody {
  model?: unknown
  stream?: unknown
  stream_options?: { include_usage?: unknown } | null
  max_tokens?: unknown
  messages?: unknown
  prompt?: unknown
}

function lastUserText(body: ChatBody): string {
  if (Array.isArray(body.messages)) {
    for (let i = body.messages.length - 1; i >= 0; i--) {
      const m = body.messages[i] as { role?: unknown; content?: unknown }
      if (m && m.role === 'user') {
        if (typeof m.content === 'string') return m.content
        if (Array.isArray(m.content))
          return m.content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join(' ')
      }
    }
  }
  if (typeof body.prompt === 'string') return body.prompt
  return ''
}

function answerTokens(body: ChatBody): string[] {
  const max = typeof body.max_tokens === 'number' && body.max_tokens > 0 ? Math.min(body.max_tokens, 100_000) : null
  if (max !== null) return Array.from({ length: max }, (_, i) => (i === 0 ? '' : ' ') + FILLER[i % FILLER.length])
  const words = `You said: ${lastUserText(body)}`.trim().split(/\s+/)
  return words.map((w, i) => (i === 0 ? w : ' ' + w))
}

export async function startFakeLlm(opts: FakeLlmOptions = {}): Promise<FakeLlm> {
  let model: string | null = opts.model === undefined ? 'sim/Qwen3-8B-Instruct' : opts.model
  const created = 1_767_225_600
  let seq = 0
  let reasoning: 'off' | 'field' | 'think' = 'off'
  let lastRequest: unknown = null
  let streamUsage = true
  let forceUsage = opts.forceUsage ?? true
  const servedNames = (): string[] => (model === null ? [] : model.split(','))
  const engineMetrics = new SimEngineMetrics()

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, ctx: FakeContext): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method === 'GET' && path === '/v1/models') {
      req.resume()
      const root = servedNames()[0]
      const data = servedNames().map((id) => ({
        id,
        object: 'model',
        created,
        owned_by: 'vllm',
        root,
        max_model_len: 32768,
      }))
      return sendJson(res, 200, { object: 'list', data })
    }
    if (req.method === 'GET' && path === '/metrics') {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
      res.end(engineMetrics.render(servedNames()[0] ?? ''))
      return
    }
    if (req.method === 'GET' && path === '/health') {
      req.resume()
      return sendJson(res, 200, { ok: true })
    }
    const chat = path === '/v1/chat/completions'
    if (req.method !== 'POST' || (!chat && path !== '/v1/completions')) {
      req.resume()
      return sendJson(res, 404, {
        error: { message: `no route ${req.method} ${path}`, type: 'NotFoundError', code: 404 },
      })
    }
    const raw = await readBody(req)
    let body: ChatBody
    try {
      body = JSON.parse(raw.toString('utf8')) as ChatBody
    } catch {
      return sendJson(res, 400, { error: { message: 'malformed JSON body', type: 'BadRequestError', code: 400 } })
    }
    lastRequest = body
    if (!model) return sendJson(res, 404, { error: { message: 'no model loaded', type: 'NotFoundError', code: 404 } })
    if (typeof body.model === 'string' && !servedNames().includes(body.model))
      return sendJson(res, 404, {
        error: { message: `The model \`${body.model}\` does not exist.`, type: 'NotFoundError', code: 404 },
      })
    const answering = servedNames()[0]
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-sim${++seq}`
    const tokens = answerTokens(body)
    const usage = {
      prompt_tokens: lastUserText(body).split(/\s+/).length,
      completion_tokens: tokens.length,
      total_tokens: 0,
    }
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : null
    const served = engineMetrics.begin(lastUserText(body), usage.prompt_tokens, maxTokens)
    const reason = maxTokens !== null ? 'length' : 'stop'
    try {
      if (body.stream !== true) {
        served.firstToken()
        for (let i = 0; i < tokens.length; i++) served.token()
      }
      await answer()
      served.end(res.writableFinished || !res.destroyed ? reason : 'abort')
    } finally {
      served.end('abort')
    }

    async function answer(): Promise<void> {
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
        res.flushHeaders()
        const object = chat ? 'chat.completion.chunk' : 'text_completion'
        const asked = body.stream_options?.include_usage === true
        let sent = 0
        // vLLM's should_include_usage: forced usage also turns on the running counts on each event.
        const running = (): object =>
          forceUsage && streamUsage
            ? {
                usage: {
                  prompt_tokens: usage.prompt_tokens,
                  total_tokens: usage.prompt_tokens + sent,
                  completion_tokens: sent,
                },
              }
            : asked
              ? { usage: null }
              : {}
        const chunk = (t: string, last: boolean): string => {
          const choice = chat
            ? { index: 0, delta: last ? {} : { role: 'assistant', content: t }, finish_reason: last ? 'stop' : null }
            : { index: 0, text: t, finish_reason: last ? 'stop' : null }
          if (t !== '') sent++
          return `data: ${JSON.stringify({ id, object, created, model: answering, choices: [choice], ...running() })}\n\n`
        }
        const thinking = (t: string): string =>
          `data: ${JSON.stringify({ id, object, created, model: answering, choices: [{ index: 0, delta: { reasoning_content: t }, finish_reason: null }] })}\n\n`
        let before: string[] = []
        if (chat && reasoning === 'field') before = SIM_REASONING.map(thinking)
        // The tags arrive cut in two, as a tokenizer may split them.
        else if (chat && reasoning === 'think')
          before = ['<th', 'ink>', ...SIM_REASONING, '</thi', 'nk>\n\n'].map((t) => chunk(t, false))
        // As vLLM does: with include_usage, one more event with no choices carries the usage.
        const usageEvent =
          streamUsage && (asked || forceUsage)
            ? [`data: ${JSON.stringify({ id, object, created, model: answering, choices: [], usage })}\n\n`]
            : []
        const chunks = [
          ...before,
          ...tokens.map((t) => chunk(t, false)),
          chunk('', true),
          ...usageEvent,
          'data: [DONE]\n\n',
        ]
        if ((opts.prefillMs ?? 0) > 0 && !(await ctx.sleep(opts.prefillMs ?? 0))) return
        served.firstToken()
        if (await writeChunks(res, ctx, counted(chunks), opts.chunkDelayMs ?? 0)) res.end()
        return
      }
      const text = tokens.join('')
      const choice = chat
        ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }
        : { index: 0, text, finish_reason: 'stop' }
      if (ctx.fault.kind === 'slow' && !(await ctx.sleep(ctx.fault.delayMs))) return
      sendJson(res, 200, {
        id,
        object: chat ? 'chat.completion' : 'text_completion',
        created,
        model: answering,
        choices: [choice],
        usage,
      })
    }

    /** The chunks as they are written, each text token counted by the engine's metrics. */
    function* counted(chunks: readonly string[]): Generator<string> {
      for (const c of chunks) {
        if ((c.includes('"content":') || c.includes('"text":')) && !c.includes('"finish_reason":"stop"')) served.token()
        yield c
      }
    }
  }

  const fake = await startFake('llm', handle, opts)
  let loadDelayMs = opts.loadDelayMs ?? 0
  let failing: { model: string; message: string } | null = null
  let held = false
  let release: (() => void)[] = []
  let loading: string | null = null
  let engineLog: ((line: string) => void) | null = null
  const say = (line: string): void => engineLog?.(line)

  const load = async (name: string, forced?: string): Promise<void> => {
    // A new engine process: its counters start from zero.
    engineMetrics.reset()
    say(`INFO [core.py] Initializing a V1 LLM engine with config: model='${name}'`)
    // Nothing to wait for: the model is served at once (the sim's default).
    const failure =
      forced ?? (failing && (failing.model === '*' || failing.model === name.split(',')[0]) ? failing.message : null)
    if (loadDelayMs === 0 && !held && failure === null) {
      model = name
      // The engine's port opens with it (the container may have been recreated, refusing until now).
      if (fake.fault.kind === 'refused') await fake.setFault('none')
      say('INFO [launcher.py] Application startup complete.')
      return
    }
    model = null
    loading = name
    await fake.setFault('refused')
    say('INFO [gpu_model_runner.py] Starting to load model ...')
    if (held) await new Promise<void>((r) => release.push(r))
    else await new Promise((r) => setTimeout(r, loadDelayMs))
    if (loading !== name) return
    loading = null
    if (failure !== null) {
      say(`ERROR [core.py] EngineCore failed to start.`)
      say(`ERROR [core.py] ${failure}`)
      say('RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}')
      return
    }
    say('INFO [gpu_model_runner.py] Model loading took 41.2 GiB and 3.1 seconds')
    model = name
    await fake.setFault('none')
    say('INFO [launcher.py] Application startup complete.')
  }

  const llm = Object.assign(fake, {
    setModel(m: string | null) {
      if (m !== model) engineMetrics.reset()
      model = m
    },
    load,
    unload() {
      loading = null
      model = null
    },
    setLoadDelay(ms: number) {
      loadDelayMs = ms
    },
    failLoads(match: string | null, message = LOAD_FAILURE) {
      failing = match === null ? null : { model: match, message }
    },
    holdLoads(on: boolean) {
      held = on
    },
    releaseLoads() {
      const waiting = release
      release = []
      for (const r of waiting) r()
    },
    setEngineLog(write: ((line: string) => void) | null) {
      engineLog = write
    },
    setReasoning(mode: 'off' | 'field' | 'think') {
      reasoning = mode
    },
    setStreamUsage(on: boolean) {
      streamUsage = on
    },
    setForceUsage(on: boolean) {
      forceUsage = on
    },
    engineMetrics,
  })
  Object.defineProperty(llm, 'lastRequest', { get: () => lastRequest, enumerable: true })
  return Object.defineProperty(llm, 'loading', {
    // The model it reports (its first served name).
    get: () => loading?.split(',')[0] ?? null,
    enumerable: true,
  }) as FakeLlm
}
