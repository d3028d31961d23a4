import fs from 'node:fs'
import path from 'node:path'
import type { Request, Response, Router } from 'express'
import multer from 'multer'
import { ApiError } from '../contract/errors'
import type { gatewayContract } from '../contract/gateway'
import type { Handlers } from '../contract/define'
import type { CoreDeps, DomainModule } from '../core/module'
import type { NodesModule } from '../nodes/module'
import type { DeepHealthHook, ProbedService } from './deepHealth'
import { forwardJson, JSON_BODY_LIMIT } from './proxy'
import { RequestLog } from './requestLog'
import { ScrubSessions, SessionNotFound } from './scrub'
import { embeddingsPath, search } from './search'
import { parseSpeech, synthesize, voiceLanguage } from './speech'
import { relayUpload, transcribeWithSpeakers } from './transcribe'
import { Upstreams, type Upstream, type UpstreamName } from './upstreams'
import { callUpstream, MiB, parseJsonObject, pipeResponse, readText, upstreamDetail, upstreamJson } from './wire'
import { ClientGone, readBody } from '../http/body'
import { sendError, sendJson } from '../http/respond'
import type { FormFile } from './multipart'

export type GatewayModule = DomainModule<typeof gatewayContract> & {
  /** The request log (tests and the bench read it). */
  readonly requestLog: RequestLog
}

export interface GatewayOptions {
  /** Chat and completions timeout (spec 1, 8: 30 minutes). */
  proxyTimeoutMs: number
  /** Largest upload relayed to the asr. */
  uploadMaxBytes: number
  /** Parent of the folder where diarization uploads are spooled (each deleted after its request). */
  uploadRoot: string
  scrubTtlMs: number
  scrubCap: number
  requestLogSize: number
}

export interface GatewayDeps extends CoreDeps {
  readonly nodes: NodesModule
  /** Filled by the services domain (deep health); the gateway only asks for probes. */
  readonly deepHealth: DeepHealthHook
  readonly options?: Partial<GatewayOptions>
}

const LIST_TTL_MS = 60_000
const LIST_TIMEOUT_MS = 5_000

/** Composition of the /v1 proxy, speech, transcription, diarization, redaction, embeddings and search. */
export async function createGatewayModule(deps: GatewayDeps): Promise<GatewayModule> {
  const { config, clock } = deps
  const logger = deps.logger.child('gateway')
  const opts: GatewayOptions = {
    proxyTimeoutMs: 30 * 60_000,
    uploadMaxBytes: 4096 * MiB,
    // Under DATA_DIR, not /tmp: /tmp is often RAM, and an upload can be gigabytes.
    uploadRoot: path.join(config.paths.dataDir, 'tmp'),
    scrubTtlMs: 60 * 60_000,
    scrubCap: 10_000,
    requestLogSize: 500,
    ...deps.options,
  }
  const upstreams = new Upstreams(config)
  const log = new RequestLog(clock, opts.requestLogSize)
  const scrubber = new ScrubSessions(clock, config.scrubTerms, opts.scrubTtlMs, opts.scrubCap)
  const probe = (service: ProbedService) => (reason: string) => deps.deepHealth.requestProbe(service, reason)

  const need = (name: UpstreamName): Upstream => {
    const up = upstreams.get(name)
    if (!up) throw new ApiError('unavailable', upstreams.missingHint(name))
    return up
  }

  /** A list fetched from an upstream, cached for a minute; failures are not cached. */
  const cached = <T>(load: () => Promise<T>): (() => Promise<T>) => {
    let value: { at: number; v: T } | null = null
    return async () => {
      if (value && clock.now() - value.at < LIST_TTL_MS) return value.v
      const v = await load()
      value = { at: clock.now(), v }
      return v
    }
  }
  const idsFrom = (v: unknown): { id: string; created?: number }[] => {
    const data = (v as { data?: unknown })?.data
    if (!Array.isArray(data)) return []
    return data.filter((m): m is { id: string; created?: number } => typeof (m as { id?: unknown })?.id === 'string')
  }
  const listFrom = async (name: 'llm' | 'asr', p: string): Promise<{ id: string; created?: number }[]> =>
    idsFrom(
      (await upstreamJson(need(name), { method: 'GET', path: p, signal: AbortSignal.timeout(LIST_TIMEOUT_MS) })).value,
    )
  const asrModels = cached(() => listFrom('asr', '/v1/models'))
  const ttsVoices = cached(async () => {
    const { value } = await upstreamJson<{ voices?: unknown }>(need('tts'), {
      method: 'GET',
      path: '/v1/voices',
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    })
    const list = Array.isArray(value.voices) ? value.voices : []
    return list
      .map((v) => (typeof v === 'string' ? v : (v as { id?: unknown })?.id))
      .filter((id): id is string => typeof id === 'string')
      .map((id) => ({ id, language: voiceLanguage(id) ?? '' }))
  })
  const asrModelName = async (): Promise<string | null> => {
    try {
      return (await asrModels())[0]?.id ?? null
    } catch {
      return null
    }
  }

  /** Wraps a raw route: request log, error bodies, and silence when the client already left. */
  const raw =
    (routePath: string, fn: (req: Request, res: Response, streamed: () => void) => Promise<void>) =>
    async (req: Request, res: Response): Promise<void> => {
      const watch = log.watch(req, res, routePath)
      try {
        await fn(req, res, watch.markStreamed)
      } catch (err) {
        if (err instanceof ClientGone || res.destroyed) return
        if (!(err instanceof ApiError)) logger.error(`${routePath} failed`, { error: err })
        else if (err.status >= 500) logger.warn(`${routePath}: ${err.message}`)
        sendError(res, err)
      }
    }

  const forward = (p: string, name: 'llm' | 'embeddings') =>
    raw(p, async (req, res, streamed) => {
      const up = need(name)
      await forwardJson(req, res, up, {
        path: name === 'embeddings' ? embeddingsPath(up.base) : p,
        timeoutMs: opts.proxyTimeoutMs,
        bodyLimit: JSON_BODY_LIMIT,
        logger,
        onStreamed: streamed,
      })
    })

  const models = raw('/v1/models', async (_req, res) => {
    const [llm, asr, voices] = await Promise.allSettled([listFrom('llm', '/v1/models'), asrModels(), ttsVoices()])
    const data: { id: string; object: 'model'; created: number; owned_by: string }[] = []
    const add = (r: PromiseSettledResult<{ id: string; created?: number }[]>, owner: string): void => {
      if (r.status === 'fulfilled')
        for (const m of r.value) data.push({ id: m.id, object: 'model', created: m.created ?? 0, owned_by: owner })
      else logger.debug(`/v1/models: ${owner} list unavailable`, { error: r.reason })
    }
    add(llm, 'llm')
    add(asr, 'asr')
    add(voices, 'tts')
    sendJson(res, 200, { object: 'list', data })
  })

  const speech = raw('/v1/audio/speech', async (req, res) => {
    const body = parseJsonObject(await readBody(req, 1 * MiB))
    const sp = parseSpeech(body)
    const ac = new AbortController()
    res.once('close', () => ac.abort(new ClientGone()))
    const wav = await synthesize(need('tts'), sp, ac.signal, probe('tts'))
    res.writeHead(200, {
      'content-type': 'audio/wav',
      ...(wav.headers['content-length'] ? { 'content-length': wav.headers['content-length'] } : {}),
    })
    await pipeResponse(wav, res)
  })

  const relay = (p: string, upstreamPath: string) =>
    raw(p, async (req, res) => {
      await relayUpload(req, res, need('asr'), {
        path: upstreamPath,
        maxBytes: opts.uploadMaxBytes,
        timeoutMs: opts.proxyTimeoutMs,
        logger,
        onWedged: probe('asr'),
      })
    })

  const uploadDir = makeUploadDir(opts.uploadRoot, logger)
  const upload = multer({
    dest: uploadDir,
    limits: { fileSize: opts.uploadMaxBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12 },
  }).single('file')

  const withSpeakers = raw('/api/audio/transcribe-with-speakers', async (req, res) => {
    const asr = need('asr')
    await new Promise<void>((resolve, reject) =>
      upload(req, res, (err: unknown) => {
        if (!err) return resolve()
        if (err instanceof multer.MulterError)
          return reject(
            new ApiError(
              err.code === 'LIMIT_FILE_SIZE' ? 'payload_too_large' : 'bad_input',
              `upload refused: ${err.message}`,
            ),
          )
        reject(new ApiError('bad_input', `unreadable multipart body: ${(err as Error).message}`))
      }),
    )
    const f = req.file
    if (!f) throw new ApiError('bad_input', "multipart field 'file' is required")
    try {
      const language =
        typeof req.body?.language === 'string' && /^[a-z]{2,3}(-[A-Z]{2})?$/.test(req.body.language)
          ? req.body.language
          : undefined
      const ac = new AbortController()
      res.once('close', () => ac.abort(new ClientGone()))
      const file: FormFile = {
        field: 'file',
        filename: safeName(f.originalname),
        contentType: f.mimetype || 'application/octet-stream',
        path: f.path,
        size: f.size,
      }
      const out = await transcribeWithSpeakers(asr, file, {
        language,
        signal: ac.signal,
        asrModel: asrModelName,
        onWedged: probe('asr'),
      })
      sendJson(res, 200, out)
    } finally {
      fs.rm(f.path, { force: true }, () => undefined)
    }
  })

  const handlers: Handlers<typeof gatewayContract> = {
    scrub: async ({ text, session_id }) => inSession(() => scrubber.scrub(text, session_id)),
    rehydrate: async ({ text, session_id }) => inSession(() => scrubber.rehydrate(text, session_id)),
    search: async (input, ctx) => ({ results: await search(need('embeddings'), need('vector'), input, ctx.signal) }),
    gatewayInfo: async () => ({
      base_urls: [deps.nodes.publicBaseUrl()],
      consumer_key_required: config.consumerApiKeys.length > 0,
      upstreams: (['llm', 'asr', 'tts', 'embeddings', 'vector'] as const).map((name) => {
        const url = upstreams.baseOf(name)
        return { name, url, hint: url === null ? upstreams.missingHint(name) : null }
      }),
      endpoints: ENDPOINTS.map(([m, p, summary]) => ({ method: m, path: p, summary })),
    }),
    gatewayRequests: async ({ limit, after }) => ({
      requests: log.list(limit, after),
      histogram: log.histogram(),
      total: log.totalCount,
    }),
    gatewayVoices: async () => {
      try {
        return { voices: await ttsVoices(), error: null }
      } catch (err) {
        return {
          voices: [],
          error: err instanceof ApiError ? err.message : `tts voices unavailable: ${(err as Error).message}`,
        }
      }
    },
    playgroundChat: (input, ctx) => playgroundChat(need('llm'), () => listFrom('llm', '/v1/models'), input, ctx.signal),
    playgroundSpeech: async ({ voice, input, speed }, ctx) => {
      const t0 = performance.now()
      const sp = parseSpeech({ voice, input, speed })
      const wav = await synthesize(need('tts'), sp, ctx.signal, probe('tts'))
      const chunks: Buffer[] = []
      let n = 0
      for await (const c of wav as AsyncIterable<Buffer>) {
        n += c.length
        if (n > 32 * MiB) throw new ApiError('payload_too_large', 'the audio is longer than the playground plays')
        chunks.push(c)
      }
      const audio = Buffer.concat(chunks)
      return {
        audio_base64: audio.toString('base64'),
        content_type: 'audio/wav',
        bytes: audio.length,
        latency_ms: Math.round(performance.now() - t0),
      }
    },
    playgroundTranscribe: async ({ audio_base64, filename }, ctx) => {
      const asr = need('asr')
      const audio = Buffer.from(audio_base64, 'base64')
      if (audio.length === 0) throw new ApiError('bad_input', 'audio_base64 holds no bytes')
      const file = path.join(uploadDir, `playground-${process.hrtime.bigint()}`)
      fs.writeFileSync(file, audio, { mode: 0o600 })
      try {
        return await transcribeWithSpeakers(
          asr,
          {
            field: 'file',
            filename: safeName(filename),
            contentType: 'application/octet-stream',
            path: file,
            size: audio.length,
          },
          { signal: ctx.signal, asrModel: asrModelName, onWedged: probe('asr') },
        )
      } finally {
        fs.rm(file, { force: true }, () => undefined)
      }
    },
  }

  return {
    name: 'gateway',
    handlers,
    requestLog: log,
    mountRoutes(router: Router) {
      router.post('/v1/chat/completions', forward('/v1/chat/completions', 'llm'))
      router.post('/v1/completions', forward('/v1/completions', 'llm'))
      router.post('/v1/embeddings', forward('/v1/embeddings', 'embeddings'))
      router.get('/v1/models', models)
      router.post('/v1/audio/speech', speech)
      router.post('/v1/audio/transcriptions', relay('/v1/audio/transcriptions', '/v1/audio/transcriptions'))
      router.post('/api/audio/diarize-chunk', relay('/api/audio/diarize-chunk', '/v1/audio/diarize-chunk'))
      router.post('/api/audio/transcribe-with-speakers', withSpeakers)
    },
    stop() {
      upstreams.destroy()
      fs.rmSync(uploadDir, { recursive: true, force: true })
    },
  }
}

/** The raw routes, for the Gateway view and the docs. */
const ENDPOINTS: [string, string, string][] = [
  ['GET', '/v1/models', 'loaded llm model, asr model and every tts voice'],
  ['POST', '/v1/chat/completions', 'forwarded verbatim to the llm (stream: true streams)'],
  ['POST', '/v1/completions', 'forwarded verbatim to the llm'],
  ['POST', '/v1/audio/speech', 'OpenAI speech body → tts synthesize; raw WAV back'],
  ['POST', '/v1/audio/transcriptions', 'multipart relayed to the asr (json, text, verbose_json)'],
  ['POST', '/v1/embeddings', 'forwarded verbatim to EMBEDDINGS_URL'],
  ['POST', '/api/audio/transcribe-with-speakers', 'multipart file → diarized transcript'],
  ['POST', '/api/audio/diarize-chunk', 'multipart chunk → asr diarize-chunk JSON'],
  ['POST', '/scrub', '{text, session_id?} → placeholders'],
  ['POST', '/rehydrate', '{text, session_id} → originals back'],
  ['POST', '/api/search', '{collection, query, limit?} → {results}'],
]

/** A private spool folder for this run; folders left by a run that crashed are removed first. */
function makeUploadDir(root: string, logger: { warn(msg: string, f?: Record<string, unknown>): void }): string {
  fs.mkdirSync(root, { recursive: true, mode: 0o700 })
  for (const name of fs.readdirSync(root)) {
    if (!name.startsWith('uploads-')) continue
    try {
      fs.rmSync(path.join(root, name), { recursive: true, force: true })
    } catch (err) {
      logger.warn('could not remove a stale upload folder', { name, error: err })
    }
  }
  return fs.mkdtempSync(path.join(root, 'uploads-'))
}

/** An unknown or expired scrub session is a 404. */
function inSession<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof SessionNotFound) throw new ApiError('not_found', err.message)
    throw err
  }
}

function safeName(name: string): string {
  const n = path
    .basename(name || 'audio')
    .replace(/[^\w. -]/g, '_')
    .slice(0, 128)
  return n === '' ? 'audio' : n
}

/** Streams a chat answer for the playground as delta events, from the same llm the /v1 proxy uses. */
async function* playgroundChat(
  llm: Upstream,
  listModels: () => Promise<{ id: string }[]>,
  input: { prompt: string; system?: string; max_tokens?: number },
  signal: AbortSignal,
): AsyncGenerator<
  | { type: 'delta'; text: string }
  | { type: 'done'; model: string; chunks: number; ttfb_ms: number | null; total_ms: number }
> {
  const t0 = performance.now()
  let model: string | undefined
  try {
    model = (await listModels())[0]?.id
  } catch (err) {
    throw new ApiError('upstream_unreachable', `llm is unreachable: ${(err as Error).message}`)
  }
  if (!model) throw new ApiError('conflict', 'no model is loaded in the llm')
  const messages = [
    ...(input.system ? [{ role: 'system', content: input.system }] : []),
    { role: 'user', content: input.prompt },
  ]
  const res = await callUpstream(llm, {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: Buffer.from(
      JSON.stringify({ model, messages, stream: true, ...(input.max_tokens ? { max_tokens: input.max_tokens } : {}) }),
    ),
    signal,
  }).catch((err: Error) => {
    throw new ApiError('upstream_unreachable', err.message)
  })
  if (res.statusCode !== 200)
    throw new ApiError('upstream_error', `llm answered HTTP ${res.statusCode}: ${upstreamDetail(await readText(res))}`)
  let ttfb: number | null = null
  let chunks = 0
  let pending = ''
  for await (const c of res as AsyncIterable<Buffer>) {
    pending += c.toString('utf8')
    let cut: number
    while ((cut = pending.indexOf('\n\n')) !== -1) {
      const block = pending.slice(0, cut)
      pending = pending.slice(cut + 2)
      for (const line of block.split('\n')) {
        if (!line.startsWith('data:')) continue
        const data = line.slice(5).trim()
        if (data === '[DONE]') continue
        try {
          const v = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] }
          const text = v.choices?.[0]?.delta?.content
          if (typeof text === 'string' && text !== '') {
            ttfb ??= performance.now() - t0
            chunks++
            yield { type: 'delta', text }
          }
        } catch {
          // a keep-alive or comment line
        }
      }
    }
  }
  if (!res.complete) throw new ApiError('upstream_error', 'llm closed the stream before it was complete')
  yield {
    type: 'done',
    model,
    chunks,
    ttfb_ms: ttfb === null ? null : Math.round(ttfb),
    total_ms: Math.round(performance.now() - t0),
  }
}
