import type { Config } from '../config/load'
import { publicBaseUrl } from '../config/publicUrl'
import { ApiError } from '../contract/errors'
import type { Handlers } from '../contract/define'
import type { gatewayContract } from '../contract/gateway'
import { redactUrlCredentials } from '../core/logger'
import type { ServiceDirectory } from '../core/serviceDirectory'
import type { ConsumerKeys } from './consumerKeys'
import type { ModelLists } from './modelLists'
import type { RequestLog } from './requestLog'
import { ScrubSessions, SessionNotFound } from './scrub'
import { search } from './search'
import { probeUpstreams } from './upstreamHealth'
import type { VoiceAliases } from './speech'
import type { Upstream, UpstreamName } from './upstreams'

type InfoHandlers = Omit<
  Handlers<typeof gatewayContract>,
  'playgroundChat' | 'playgroundSpeech' | 'playgroundTranscribe'
>

export interface InfoHandlerDeps {
  readonly config: Config
  readonly services: ServiceDirectory
  readonly need: (name: UpstreamName) => Upstream
  readonly scrubber: ScrubSessions
  readonly lists: ModelLists
  readonly voices: VoiceAliases
  readonly log: RequestLog
  readonly keys: ConsumerKeys
}

/** Redaction, search, and what the Gateway view shows: addresses, endpoints, requests, voices. */
export function infoHandlers(d: InfoHandlerDeps): InfoHandlers {
  return {
    scrub: async ({ text, session_id }) => inSession(() => d.scrubber.scrub(text, session_id)),
    rehydrate: async ({ text, session_id }) => inSession(() => d.scrubber.rehydrate(text, session_id)),
    search: async (input, ctx) => ({
      results: await search(d.need('embeddings'), d.need('vector'), input, ctx.signal),
    }),
    gatewayInfo: async () => ({
      base_urls: [redactUrlCredentials(publicBaseUrl(d.config))],
      consumer_key_required: d.config.consumerApiKeys.length > 0 || d.keys.required,
      upstreams: d.services.all().map((s) => ({ name: s.name, url: s.baseUrl, hint: s.hint })),
      endpoints: ENDPOINTS.map(([m, p, summary]) => ({ method: m, path: p, summary })),
    }),
    gatewayRequests: async ({ limit, after }) => ({
      requests: d.log.list(limit, after),
      histogram: d.log.histogram(),
      total: d.log.totalCount,
    }),
    gatewayUpstreams: async (_in, ctx) => probeUpstreams(d, ctx.signal),
    gatewayVoices: async () => {
      const aliases = await d.voices.table()
      try {
        return { voices: await d.lists.ttsVoices(), aliases, error: null }
      } catch (err) {
        return {
          voices: [],
          aliases,
          error: err instanceof ApiError ? err.message : `tts voices unavailable: ${(err as Error).message}`,
        }
      }
    },
  }
}

/** The raw routes, for the Gateway view and the docs. */
const ENDPOINTS: [string, string, string][] = [
  ['GET', '/v1/models', 'loaded llm model, asr model and every tts voice'],
  ['POST', '/v1/chat/completions', 'forwarded verbatim to the llm (stream: true streams)'],
  ['POST', '/v1/completions', 'forwarded verbatim to the llm'],
  ['POST', '/v1/audio/speech', 'OpenAI speech body (voice id, or alloy, echo, …) → tts; WAV, or pcm without header'],
  ['POST', '/v1/audio/transcriptions', 'multipart relayed to the asr (json, text, verbose_json)'],
  ['POST', '/v1/embeddings', 'forwarded verbatim to EMBEDDINGS_URL'],
  ['POST', '/api/audio/transcribe-with-speakers', 'multipart file → diarized transcript'],
  ['POST', '/api/audio/diarize-chunk', 'multipart chunk → asr diarize-chunk JSON'],
  ['POST', '/scrub', '{text, session_id?} → placeholders'],
  ['POST', '/rehydrate', '{text, session_id} → originals back'],
  ['POST', '/api/search', '{collection, query, limit?} → {results}'],
]

/** An unknown or expired scrub session is a 404. */
function inSession<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof SessionNotFound) throw new ApiError('not_found', err.message)
    throw err
  }
}
