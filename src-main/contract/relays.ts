import { z } from 'zod'
import type { HttpRoute } from './define'
import { DiarizedTranscript } from './gateway'

/**
 * The gateway's routes outside the contract (src-main/gateway/relay/proxyRoutes.ts, audioRoutes.ts):
 * OpenAI-shaped relays and uploads that stream their bodies through, so no contract method serves
 * them. Described here once, for the OpenAPI documents (openapi.ts); a test fails when a raw
 * consumer route is mounted without an entry here.
 */

const MiB = 1024 * 1024
/** Largest JSON body chat, completions and embeddings take (413 beyond). */
export const RELAY_JSON_BODY_LIMIT = 64 * MiB
/** Largest /v1/audio/speech body (413 beyond). */
export const SPEECH_BODY_LIMIT = 1 * MiB

/** What `/v1/audio/speech` answers: the tts's WAV as it is, or its samples alone (OpenAI's `pcm`). */
export const SPEECH_FORMATS = ['wav', 'pcm'] as const

/** The public speech body (OpenAI `audio.speech`); unknown fields are ignored as OpenAI does. */
export const SpeechRequest = z.object({
  model: z.string().max(200).optional(),
  input: z.string().min(1, 'input must not be empty').max(20_000),
  /** A voice id, or an alias such as OpenAI's `alloy` (see VoiceAliases). */
  voice: z.string().min(1).max(200),
  response_format: z.enum(SPEECH_FORMATS).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  instructions: z.string().max(4000).optional(),
})
export type SpeechRequest = z.infer<typeof SpeechRequest>

/*
 * The bodies Tandem forwards verbatim: only "a JSON object" is checked here, so these schemas are
 * OpenAI's required members (which the upstream enforces) and the members Tandem itself looks at.
 */
const ChatMessage = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
})
const Stream = z.boolean().optional().describe('true: answered as server-sent events (text/event-stream)')
const Model = z.string().describe('Checked against the consumer key’s allowed models, when the key limits them')

export const ChatCompletionRequest = z.looseObject({
  model: Model,
  messages: z.array(ChatMessage).min(1),
  stream: Stream,
  max_tokens: z.number().int().optional(),
  temperature: z.number().optional(),
})

export const CompletionRequest = z.looseObject({
  model: Model,
  prompt: z.union([z.string(), z.array(z.string()), z.array(z.number().int()), z.array(z.array(z.number().int()))]),
  stream: Stream,
  max_tokens: z.number().int().optional(),
})

export const EmbeddingRequest = z.looseObject({
  model: Model,
  input: z.union([z.string(), z.array(z.string()), z.array(z.number().int()), z.array(z.array(z.number().int()))]),
  encoding_format: z.enum(['float', 'base64']).optional(),
})

/**
 * OpenAI `audio.transcriptions`: a diarized request (issue 43) is answered by Tandem's pipeline;
 * every other form is relayed to the asr field for field. Tandem checks the file is there.
 */
export const TranscriptionForm = z.looseObject({
  file: z.file(),
  model: z.string(),
  language: z.string().optional(),
  prompt: z.string().optional(),
  response_format: z.enum(['json', 'text', 'verbose_json', 'srt', 'vtt', 'diarized_json']).optional(),
  temperature: z.number().optional(),
  stream: z
    .boolean()
    .optional()
    .describe('With a diarized request: server-sent transcript.text.segment events, then transcript.text.done'),
  'known_speaker_names[]': z.array(z.string().max(64)).max(4).optional().describe('Names for known voices'),
  'known_speaker_references[]': z
    .array(z.string())
    .max(4)
    .optional()
    .describe('One data URL per name: 2–10 s of that voice (wav, flac, mp3, ogg, m4a, webm)'),
  chunking_strategy: z
    .string()
    .optional()
    .describe("'auto', or a server_vad object as chunking_strategy[type]… fields"),
})

/** OpenAI's `TranscriptionDiarized` (openai 6.29.0), what `diarized_json` answers. */
export const DiarizedTranscription = z.object({
  task: z.literal('transcribe'),
  duration: z.number(),
  text: z.string(),
  segments: z.array(
    z.object({
      type: z.literal('transcript.text.segment'),
      id: z.string(),
      start: z.number(),
      end: z.number(),
      speaker: z.string().describe('A, B, … in order of first speech, or a known_speaker_names entry'),
      text: z.string(),
    }),
  ),
  usage: z.object({ type: z.literal('duration'), seconds: z.number() }),
})

export const DiarizeChunkForm = z.looseObject({ file: z.file() })

export const TranscribeWithSpeakersForm = z.object({
  file: z.file(),
  language: z.string().optional().describe('A language tag such as en or pt-BR; anything else is ignored'),
})

export const OpenAiModel = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number(),
  owned_by: z.string(),
})
export type OpenAiModel = z.infer<typeof OpenAiModel>
/** What GET /v1/models answers. */
export const OpenAiModelList = z.object({ object: z.literal('list'), data: z.array(OpenAiModel) })
export type OpenAiModelList = z.infer<typeof OpenAiModelList>

/** An upstream's JSON answer, relayed as it is. */
const UpstreamAnswer = z.looseObject({}).describe('The upstream’s answer, relayed unchanged')
const EventStream = z
  .string()
  .describe(
    '`data:` lines of chunk objects, then `data: [DONE]`; an upstream error after the request was accepted ' +
      'is one `event: error` whose data is OpenAI’s error object',
  )
const Binary = z.file()

/** One error answer a route can give: why, and whether it carries Retry-After. */
export interface RelayError {
  readonly why: string
  readonly retryAfter?: boolean
}
export type RelayStatus = 400 | 401 | 403 | 404 | 408 | 413 | 429 | 502 | 503 | 504 | 507

export interface RelayDef {
  readonly operationId: string
  readonly summary: string
  readonly description: string
  readonly body?: { readonly type: 'application/json' | 'multipart/form-data'; readonly schema: z.ZodType }
  /** The 200 answer: its description and a schema per content type. */
  readonly answer: { readonly why: string; readonly content: Readonly<Record<string, z.ZodType>> }
  readonly errors: Readonly<Partial<Record<RelayStatus, RelayError>>>
  /** An upstream's own error status passed on: how, and whether its body is in the route's error shape. */
  readonly upstreamErrors?: { readonly why: string; readonly shaped: boolean }
}

/** Refusals at the edge, before the route runs (http/edge.ts, consumer keys). */
const EDGE: Partial<Record<RelayStatus, RelayError>> = {
  401: { why: 'No or bad consumer key (asked for only when CONSUMER_API_KEYS or named keys are set).' },
  429: {
    why: 'The key is over its requests per minute or its concurrent requests, or this address sent too many bad keys.',
    retryAfter: true,
  },
}
const BODY = (limit: string): Partial<Record<RelayStatus, RelayError>> => ({
  400: { why: 'The body is not what the route reads (not a JSON object, a bad field; `param` names it).' },
  408: { why: 'The body did not arrive in time.' },
  413: { why: `The body is larger than ${limit}.` },
})
const FORWARDED_JSON = (upstream: string): Partial<Record<RelayStatus, RelayError>> => ({
  ...EDGE,
  ...BODY('64 MiB'),
  413: {
    why: 'The body is larger than 64 MiB, or than one address or key may hold in the body budget (a body counts twice its size against half of GATEWAY_BODY_BUDGET_MB).',
  },
  403: { why: 'The consumer key may not use the requested `model`.' },
  502: { why: `The ${upstream} is unreachable.` },
  503: {
    why: `The ${upstream} is not configured, a model swap is loading and the request could not wait for it, or the bodies in progress fill the gateway's body budget (GATEWAY_BODY_BUDGET_MB; one address or key may hold half of it).`,
    retryAfter: true,
  },
  504: {
    why: `The ${upstream} did not finish within the generation timeout (GATEWAY_TIMEOUT_MIN, 30 min by default).`,
  },
})
/** A multipart upload to the asr; `relayed` ones have the proxy timeout (the diarized transcript has none). */
const UPLOAD = (relayed: boolean): Partial<Record<RelayStatus, RelayError>> => ({
  ...EDGE,
  400: {
    why: 'The body is not a multipart/form-data form with a `file` part, carries a second file, or is compressed (a Content-Encoding other than identity).',
  },
  408: {
    why: 'No upload bytes arrived for the idle timeout (GATEWAY_UPLOAD_IDLE_S, 60 s by default); the upload was dropped.',
  },
  413: { why: 'The upload is larger than the upload limit (GATEWAY_UPLOAD_MAX_MB, 4 GiB by default).' },
  502: { why: 'The asr is unreachable.' },
  503: {
    why: 'The asr is not configured, or it failed with a 5xx (a health probe is started; retry after 60 s).',
    retryAfter: true,
  },
  ...(relayed ? { 504: { why: 'The asr did not answer within the proxy timeout.' } } : {}),
})
/** The asr's own 4xx, answered in the route's error shape. */
const ASR_REFUSALS = {
  why: 'The asr’s own 4xx status, in the route’s error shape with the asr’s `detail` as the message.',
  shaped: true,
}
const VERBATIM =
  ' Tandem forwards the body verbatim (members it does not list are passed on untouched) and relays the answer as the upstream sends it.'

/** Chat and completions answer alike: the same relay serves both. */
const LLM_ANSWER = {
  why: 'The llm’s answer: JSON, or an event stream when `stream: true`.',
  content: { 'application/json': UpstreamAnswer, 'text/event-stream': EventStream },
}
const LLM_UPSTREAM_ERRORS = {
  why: 'The llm’s own error status, its body passed on when in OpenAI’s error shape, else wrapped in it (a stream asked for gets one `event: error` with status 200 instead).',
  shaped: true,
}

export const gatewayRelays = {
  'POST /v1/chat/completions': {
    operationId: 'createChatCompletion',
    summary: 'Chat completion, forwarded verbatim to the llm (stream: true streams)',
    description: `OpenAI chat completions, served by the configured llm.${VERBATIM} \`stream: true\` answers as server-sent events, chunk by chunk.`,
    body: { type: 'application/json', schema: ChatCompletionRequest },
    answer: LLM_ANSWER,
    errors: FORWARDED_JSON('llm'),
    upstreamErrors: LLM_UPSTREAM_ERRORS,
  },
  'POST /v1/completions': {
    operationId: 'createCompletion',
    summary: 'Text completion, forwarded verbatim to the llm',
    description: `OpenAI (legacy) completions, served by the configured llm.${VERBATIM} \`stream: true\` answers as server-sent events.`,
    body: { type: 'application/json', schema: CompletionRequest },
    answer: LLM_ANSWER,
    errors: FORWARDED_JSON('llm'),
    upstreamErrors: LLM_UPSTREAM_ERRORS,
  },
  'POST /v1/embeddings': {
    operationId: 'createEmbedding',
    summary: 'Embeddings, forwarded verbatim to EMBEDDINGS_URL',
    description: `OpenAI embeddings, served by the configured embeddings service.${VERBATIM}`,
    body: { type: 'application/json', schema: EmbeddingRequest },
    answer: { why: 'The embeddings service’s answer.', content: { 'application/json': UpstreamAnswer } },
    errors: FORWARDED_JSON('embeddings service'),
    upstreamErrors: {
      why: 'The embeddings service’s own error status, its body passed on when in OpenAI’s error shape, else wrapped in it.',
      shaped: true,
    },
  },
  'GET /v1/models': {
    operationId: 'listOpenAiModels',
    summary: 'Every model the placements serve, the asr model and every tts voice',
    description:
      'Every id each placement’s engine lists (node1’s llm among them), the asr model and every tts voice, merged into one OpenAI model list (`owned_by` names the service). A service that does not answer is left out of the list, never an error.',
    answer: { why: 'The merged model list.', content: { 'application/json': OpenAiModelList } },
    errors: EDGE,
  },
  'POST /v1/audio/speech': {
    operationId: 'createSpeech',
    summary: 'Speech from the tts (a voice id, or alloy, echo, …); WAV, or pcm without the header',
    description:
      'OpenAI audio.speech. Tandem reads this body itself: `voice` is a tts voice id (<family>.<LOCALE>.<Name>) or an alias such as `alloy`; `model` is optional and only checked against the consumer key; other members are ignored.',
    body: { type: 'application/json', schema: SpeechRequest },
    answer: {
      why: 'The speech: the tts’s WAV, or with `response_format: "pcm"` its samples without the WAV header.',
      content: { 'audio/wav': Binary, 'audio/pcm': Binary },
    },
    errors: {
      ...EDGE,
      ...BODY('1 MiB'),
      403: { why: 'The consumer key may not use the requested `model`.' },
      404: { why: 'The tts does not know the voice.' },
      502: { why: 'The tts is unreachable, lists no voice for an alias, or answered something that is not a WAV.' },
      503: {
        why: 'The tts is not configured, or it failed with a 5xx (a health probe is started; retry after 60 s).',
        retryAfter: true,
      },
    },
  },
  'POST /v1/audio/transcriptions': {
    operationId: 'createTranscription',
    summary: 'Transcription: diarized by Tandem (diarized_json, known voices) or relayed to the asr',
    description:
      'OpenAI audio.transcriptions. The form is received whole; a diarized request (response_format diarized_json, known_speaker_names[]/known_speaker_references[], or a model named …diarize) is answered by the diarized pipeline in OpenAI’s shapes (json, text, srt and vtt with the speaker in each cue, or SSE with stream); every other form is relayed to the asr field for field (unknown ones included) and its answer relayed as it is.',
    body: { type: 'multipart/form-data', schema: TranscriptionForm },
    answer: {
      why: 'The transcript: JSON (json, verbose_json, diarized_json), text (text, srt, vtt) or server-sent events, as `response_format` and `stream` ask.',
      content: {
        'application/json': z.union([DiarizedTranscription, UpstreamAnswer]),
        'text/plain': z.string(),
        'text/event-stream': z.string(),
      },
    },
    errors: UPLOAD(true),
    upstreamErrors: ASR_REFUSALS,
  },
  'POST /api/audio/diarize-chunk': {
    operationId: 'diarizeChunk',
    summary: 'Speakers of one audio chunk: the multipart form relayed to the asr’s diarize-chunk',
    description:
      'The multipart body (a `file` part) is streamed to the asr’s diarize-chunk byte for byte and its JSON answer relayed as it is.',
    body: { type: 'multipart/form-data', schema: DiarizeChunkForm },
    answer: { why: 'The asr’s diarization of the chunk.', content: { 'application/json': UpstreamAnswer } },
    errors: UPLOAD(true),
    upstreamErrors: ASR_REFUSALS,
  },
  'POST /api/audio/transcribe-with-speakers': {
    operationId: 'transcribeWithSpeakers',
    summary: 'Transcript with speakers of an uploaded recording (multipart file)',
    description:
      'The upload is spooled to disk, transcribed with word timestamps and diarized in parallel by the asr, and the words are given to speakers.',
    body: { type: 'multipart/form-data', schema: TranscribeWithSpeakersForm },
    answer: { why: 'The diarized transcript.', content: { 'application/json': DiarizedTranscript } },
    errors: {
      ...UPLOAD(false),
      502: { why: 'The asr is unreachable or answered something unexpected.' },
      503: {
        why: 'The asr is not configured or failed with a 5xx, or the upload spool is full (retry shortly).',
        retryAfter: true,
      },
      507: { why: 'Not enough free disk space for the upload under DATA_DIR.' },
    },
  },
} as const satisfies Record<HttpRoute, RelayDef>
