import { z } from 'zod'
import { method, type ContractTable } from './define'
import { CollectionName } from './schemas'

/**
 * The gateway's contract methods (DESIGN.md, The contract). The OpenAI-shaped /v1 proxies, the
 * audio uploads and the embeddings proxy are raw routes (they stream bodies through), described
 * in relays.ts; see src-main/gateway/module.ts and the README (Gateway).
 */

export const ScrubEntity = z.object({
  type: z.enum(['EMAIL', 'PHONE', 'IP', 'CARD', 'IBAN', 'SECRET', 'TERM']),
  placeholder: z.string(),
  /** Offsets into the original text. */
  start: z.number(),
  end: z.number(),
})

export const SearchHit = z.object({
  id: z.union([z.string(), z.number()]),
  score: z.number(),
  payload: z.record(z.string(), z.unknown()).nullable(),
})

export const GatewayRequest = z.object({
  seq: z.number(),
  at: z.number(),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  latency_ms: z.number(),
  ttfb_ms: z.number().nullable(),
  bytes: z.number(),
  streamed: z.boolean(),
  aborted: z.boolean(),
  /** Made from the dashboard's playground rather than by a LAN client. */
  playground: z.boolean(),
  /** The consumer key's name, or (legacy), (admin), (open); null off the consumer surface. */
  key: z.string().nullable(),
  /** Time to first token of a streamed answer (ms). */
  ttft_ms: z.number().nullable(),
  tokens_per_s: z.number().nullable(),
  prompt_tokens: z.number().nullable(),
  completion_tokens: z.number().nullable(),
  /** Completion tokens counted from chunks because the upstream sent no usage: an estimate. */
  tokens_estimated: z.boolean(),
  /** The placement that served it (e.g. `node3+node4`); null when none did (speech, embeddings service). */
  placement: z.string().nullable().default(null),
})
export type GatewayRequest = z.infer<typeof GatewayRequest>

export const UpstreamInfo = z.object({
  name: z.enum(['llm', 'asr', 'tts', 'embeddings', 'vector']),
  /** Where the gateway forwards; null when not configured. */
  url: z.string().nullable(),
  hint: z.string().nullable(),
})

/** One upstream as probed now: reachable and answering, answering with errors, unreachable, or not configured. */
export const UpstreamHealth = z.object({
  name: UpstreamInfo.shape.name,
  url: z.string().nullable(),
  state: z.enum(['up', 'error', 'down', 'not_configured']),
  /** Request start to response headers (ms); null when nothing answered. */
  latency_ms: z.number().nullable(),
  /** HTTP status or the reason it is down; the configuration hint when not configured. */
  detail: z.string().nullable(),
})
export type UpstreamHealth = z.infer<typeof UpstreamHealth>

export const GatewayInfo = z.object({
  /** Base URLs LAN clients can use (PUBLIC_URL, else this host's addresses). */
  base_urls: z.array(z.string()),
  consumer_key_required: z.boolean(),
  upstreams: z.array(UpstreamInfo),
  endpoints: z.array(z.object({ method: z.string(), path: z.string(), summary: z.string() })),
})
export type GatewayInfo = z.infer<typeof GatewayInfo>

export const DiarizedTranscript = z.object({
  duration: z.number(),
  language: z.string(),
  speakers_detected: z.array(z.string()),
  segments: z.array(z.object({ start_ms: z.number(), end_ms: z.number(), speaker: z.string(), text: z.string() })),
  models: z.object({ transcription: z.string(), diarization: z.string() }),
})

const SessionId = z.string().min(1).max(128)
/** Characters one scrub takes (1 MB of text), and one rehydrate (placeholders can be longer than what they replace). */
const SCRUB_TEXT_MAX = 1_000_000
const REHYDRATE_TEXT_MAX = 3_000_000
/** Room for the longest text as JSON (non-ASCII characters take up to 3 bytes); a 4 MB body is refused with 413. */
const SCRUB_BODY_LIMIT = 3 * 1024 * 1024

export const PlaygroundChatEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), text: z.string() }),
  z.object({
    type: z.literal('done'),
    model: z.string(),
    /** The placement that answered (e.g. `node2`); null when the llm service did, without placements. */
    placement: z.string().nullable(),
    chunks: z.number(),
    ttfb_ms: z.number().nullable(),
    total_ms: z.number(),
  }),
])

/** What `GET /v1/usage` answers a license's gateway key: its tokens and audio seconds this period, per model. */
export const KeyPeriodUsage = z.object({
  object: z.literal('usage'),
  license_id: z.string(),
  period_start: z.string(),
  resets_at: z.string(),
  tokens: z.object({
    /** The tier's quota plus this period's top-ups; null: no quota. */
    allowed: z.number().nullable(),
    used: z.number(),
    remaining: z.number().nullable(),
  }),
  /** Seconds of audio transcribed (the input's length) or synthesized (the speech's length). */
  audio_seconds: z.object({
    /** The tier's audio minutes × 60; null: no audio quota. */
    allowed: z.number().nullable(),
    used: z.number(),
    remaining: z.number().nullable(),
  }),
  /** Most tokens first; `model` is the name the requests used (a voice for speech). */
  models: z.array(
    z.object({
      model: z.string(),
      requests: z.number(),
      prompt_tokens: z.number(),
      completion_tokens: z.number(),
      audio_seconds: z.number(),
    }),
  ),
})
export type KeyPeriodUsage = z.infer<typeof KeyPeriodUsage>

export const gatewayContract = {
  keyPeriodUsage: method({
    summary:
      "A license's gateway key: its tokens and audio seconds this period (used, remaining, when they reset) per model",
    http: 'GET /v1/usage',
    httpOnly: true,
    errorStyle: 'openai',
    input: z.object({}),
    output: KeyPeriodUsage,
  }),
  scrub: method({
    summary:
      'Replace personal data and secrets with stable placeholders ([EMAIL_1]); pass session_id to keep numbering',
    http: 'POST /scrub',
    bodyLimit: SCRUB_BODY_LIMIT,
    input: z.object({ text: z.string().max(SCRUB_TEXT_MAX), session_id: SessionId.optional() }),
    output: z.object({ text: z.string(), session_id: z.string(), entities: z.array(ScrubEntity) }),
  }),
  rehydrate: method({
    summary: 'Put the originals back in (possibly LLM-rewritten) text; unknown session → 404',
    http: 'POST /rehydrate',
    bodyLimit: SCRUB_BODY_LIMIT,
    input: z.object({ text: z.string().max(REHYDRATE_TEXT_MAX), session_id: SessionId }),
    output: z.object({ text: z.string(), replaced: z.number() }),
  }),
  search: method({
    summary: 'Embed the query through EMBEDDINGS_URL and search the Qdrant-compatible store at VECTOR_URL',
    http: 'POST /api/search',
    input: z.object({
      collection: CollectionName,
      query: z.string().min(1).max(8192),
      limit: z.number().int().min(1).max(100).default(10),
      model: z.string().max(200).optional(),
    }),
    output: z.object({ results: z.array(SearchHit) }),
  }),
  gatewayInfo: method({
    summary: 'Gateway base URLs, upstream addresses and endpoint list (for the Gateway view)',
    http: 'GET /api/gateway',
    input: z.object({}),
    output: GatewayInfo,
  }),
  gatewayRequests: method({
    summary: 'The last gateway requests (newest first) and a latency histogram over them',
    http: 'GET /api/gateway/requests',
    input: z.object({
      limit: z.coerce.number().int().min(1).max(500).default(100),
      after: z.coerce.number().int().min(0).default(0),
    }),
    output: z.object({
      requests: z.array(GatewayRequest),
      histogram: z.object({ bounds_ms: z.array(z.number()), counts: z.array(z.number()) }),
      total: z.number(),
    }),
  }),
  gatewayUpstreams: method({
    summary: 'Probe every upstream now (health and latency), with the models the llm routes serve',
    http: 'GET /api/gateway/upstreams',
    input: z.object({}),
    output: z.object({
      upstreams: z.array(UpstreamHealth),
      /** The id the llm lists first (what snippets name), null when it lists none or is down. */
      llm_model: z.string().nullable(),
      /** The llm models served now, as /v1/models lists them, with the placement serving each (Try it picks one). */
      llm_models: z.array(z.object({ id: z.string(), placement: z.string().nullable() })),
    }),
  }),
  gatewayVoices: method({
    summary: 'The tts voices (id and language tag, cached for a minute) and the aliases /v1/audio/speech accepts',
    http: 'GET /api/gateway/voices',
    input: z.object({}),
    output: z.object({
      voices: z.array(z.object({ id: z.string(), language: z.string() })),
      /** OpenAI voice names (alloy, echo, …) and other TTS_VOICE_ALIASES, with the voice each stands for. */
      aliases: z.array(z.object({ alias: z.string(), voice: z.string(), source: z.enum(['setting', 'default']) })),
      error: z.string().nullable(),
    }),
  }),
  playgroundChat: method({
    summary: 'Playground: stream a chat answer from the placement serving `model` (one prompt)',
    http: 'POST /api/gateway/playground/chat',
    stream: true,
    input: z.object({
      prompt: z.string().min(1).max(8000),
      /** A model /v1/models lists; absent: the first the llm lists, as before placements. */
      model: z.string().min(1).max(200).optional(),
      system: z.string().max(4000).optional(),
      max_tokens: z.number().int().min(1).max(4096).optional(),
    }),
    output: PlaygroundChatEvent,
  }),
  playgroundSpeech: method({
    summary: 'Playground: synthesize speech with a voice; WAV as base64',
    http: 'POST /api/gateway/playground/speech',
    input: z.object({
      voice: z.string().min(1).max(200),
      input: z.string().min(1).max(2000),
      speed: z.number().min(0.25).max(4).optional(),
    }),
    output: z.object({ audio_base64: z.string(), content_type: z.string(), bytes: z.number(), latency_ms: z.number() }),
  }),
  playgroundTranscribe: method({
    summary: 'Playground: diarized transcription of a short recording (base64, at most 8 MiB)',
    http: 'POST /api/gateway/playground/transcribe',
    // 8 MiB as base64, up to 4 reference clips, and the JSON around them: the browser playground sends its recordings here too.
    bodyLimit: 24 * 1024 * 1024,
    input: z.object({
      audio_base64: z
        .string()
        .min(1)
        .max(Math.ceil((8 * 1024 * 1024 * 4) / 3) + 4),
      filename: z
        .string()
        .regex(/^[\w. -]{1,128}$/)
        .default('audio.wav'),
      /** Speakers by name (issue 43): each a 2–10 s clip of that voice, as on /v1/audio/transcriptions. */
      known_speakers: z
        .array(
          z.object({
            name: z.string().trim().min(1).max(64),
            audio_base64: z
              .string()
              .min(1)
              .max(3 * 1024 * 1024),
          }),
        )
        .max(4)
        .default([]),
    }),
    output: DiarizedTranscript,
  }),
} satisfies ContractTable
