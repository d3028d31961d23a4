import type http from 'node:http'
import type { Router } from 'express'
import type { Logger } from '../core/logger'
import { requestState } from '../http/requestState'
import { sendJson } from '../http/respond'
import { checkKeyModel } from './consumerKeys'
import type { ModelLists } from './modelLists'
import { RELAY_JSON_BODY_LIMIT } from '../contract/relays'
import { forwardJson, type LlmGate } from './proxy'
import type { RawRoute } from './rawRoute'
import { embeddingsPath } from './search'
import type { Upstream, UpstreamName } from './upstreams'

export type { LlmGate } from './proxy'

export interface ProxyRouteDeps {
  readonly route: RawRoute
  readonly need: (name: UpstreamName) => Upstream
  /** Chat and completions timeout (spec 1, 8: 30 minutes). */
  readonly proxyTimeoutMs: number
  readonly logger: Logger
  readonly gate?: LlmGate
}

/** A relayed route's handler: the same function serves the Express router and the fast path. */
export type RelayRoute = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>

/** The OpenAI-shaped JSON routes forwarded verbatim, by exact path (all POST). */
export function relayRoutes(d: ProxyRouteDeps): ReadonlyMap<string, RelayRoute> {
  const forward = (p: string, name: 'llm' | 'embeddings'): RelayRoute =>
    d.route(p, (req, res, exchange) => {
      const up = d.need(name)
      const st = requestState(res)
      return forwardJson(req, res, up, {
        path: name === 'embeddings' ? embeddingsPath(up.base) : p,
        timeoutMs: d.proxyTimeoutMs,
        bodyLimit: RELAY_JSON_BODY_LIMIT,
        logger: d.logger,
        exchange,
        gate: name === 'llm' ? d.gate : undefined,
        checkModel: (model) => checkKeyModel(st.consumer, model),
        usage: st.usage,
      })
    })
  return new Map([
    ['/v1/chat/completions', forward('/v1/chat/completions', 'llm')],
    ['/v1/completions', forward('/v1/completions', 'llm')],
    ['/v1/embeddings', forward('/v1/embeddings', 'embeddings')],
  ])
}

/** The relayed routes on the router (the path when the fast path is off), and the merged model list. */
export function mountProxyRoutes(
  router: Router,
  relayed: ReadonlyMap<string, RelayRoute>,
  d: { route: RawRoute; lists: ModelLists },
): void {
  for (const [p, handler] of relayed) router.post(p, handler)
  router.get(
    '/v1/models',
    d.route('/v1/models', async (_req, res) => sendJson(res, 200, await d.lists.openAiList())),
  )
}
