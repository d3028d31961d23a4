import type { Config } from '../config/load'
import { publicBaseUrl } from '../config/publicUrl'
import { ApiError } from '../contract/errors'
import { splitRoute, type Handlers, type HttpRoute } from '../contract/define'
import { gatewayContract } from '../contract/gateway'
import { gatewayRelays } from '../contract/relays'
import { redactUrlCredentials } from '../lib/logger'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import type { ConsumerKeys } from './keys/consumerKeyStore'
import type { ModelLists } from './relay/modelLists'
import type { RequestLog } from './relay/requestLog'
import { ScrubSessions, SessionNotFound } from './scrub/scrub'
import { search } from './relay/search'
import { probeUpstreams } from './relay/upstreamHealth'
import type { VoiceAliases } from './audio/speech'
import type { Upstream, UpstreamName } from './relay/upstreams'

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
    keyPeriodUsage: async (_in, ctx) => d.keys.periodUsage(ctx.consumerKeyId),
    scrub: async ({ text, session_id }) => inSession(() => d.scrubber.scrub(text, session_id)),
    rehydrate: async ({ text, session_id }) => inSession(() => d.scrubber.rehydrate(text, session_id)),
    search: async (input, ctx) => ({
      results: await search(d.need('embeddings'), d.need('vector'), input, ctx.signal),
    }),
    gatewayInfo: async () => ({
      base_urls: [redactUrlCredentials(publicBaseUrl(d.config))],
      consumer_key_required: d.config.consumerApiKeys.length > 0 || d.keys.required,
      upstreams: d.services.all().map((s) => ({ name: s.name, url: s.baseUrl, hint: s.hint })),
      endpoints: gatewayEndpoints(),
    }),
    gatewayRequests: async ({ limit, after }) => ({
      requests: d.log.list(limit, after),
      histogram: d.log.histogram(),
      total: d.log.totalCount,
    }),
    gatewayUpstreams: async (_in, ctx) => {
      // The same list /v1/models answers: a model picker offers only what a request can reach.
      const [probed, served] = await Promise.all([
        probeUpstreams(d, ctx.signal),
        d.lists.servedModels().catch(() => []),
      ])
      return { ...probed, llm_models: served }
    },
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

/** The consumer methods LAN clients call beside the relays. */
const CONSUMER_METHODS = ['keyPeriodUsage', 'scrub', 'rehydrate', 'search'] as const

/** What the Gateway view lists: each relay and consumer method with the summary it is documented with. */
export function gatewayEndpoints(): { method: string; path: string; summary: string }[] {
  const row = (route: HttpRoute, summary: string) => {
    const { verb, path } = splitRoute(route)
    return { method: verb, path, summary }
  }
  return [
    ...Object.entries(gatewayRelays).map(([route, r]) => row(route as HttpRoute, r.summary)),
    ...CONSUMER_METHODS.map((name) => row(gatewayContract[name].http, gatewayContract[name].summary)),
  ]
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
