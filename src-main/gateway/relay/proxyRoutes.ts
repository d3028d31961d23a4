import type { Router } from 'express'
import { RELAY_JSON_BODY_LIMIT } from '../../contract/relays'
import type { Logger } from '../../lib/logger'
import { sendJson } from '../../http/respond'
import type { BodyBudget } from './bodyBudget'
import type { ModelLists } from './modelLists'
import type { PlacementUpstreams } from './placementUpstreams'
import { relayRoute, type RelayRoute } from './proxy'
import type { RawRoute } from './rawRoute'
import type { RelayBodyParser } from './relayBodyParser'
import type { RequestLog } from './requestLog'
import { embeddingsPath } from './search'
import type { Upstream, UpstreamName } from './upstreams'

export interface ProxyRouteDeps {
  readonly need: (name: UpstreamName) => Upstream
  readonly log: RequestLog
  /** Chat and completions timeout (spec 1, 8: 30 minutes). */
  readonly proxyTimeoutMs: number
  /** How long a client refused mid-body may go on sending. */
  readonly drainMs: number
  readonly logger: Logger
  /** Where the llm routes go by the body's `model` (see RelayDeps.placements). */
  readonly placements?: PlacementUpstreams
  /** What the bodies in progress may hold in memory together. */
  readonly bodyBudget: BodyBudget
  /** A body that sends nothing for this long is answered 408 and released. */
  readonly bodyIdleMs: number
  /** Reads a body's `model` and `stream` (a large one in a worker). */
  readonly parser: RelayBodyParser
}

/** The OpenAI-shaped JSON routes forwarded verbatim, by exact path (all POST). */
export function relayRoutes(d: ProxyRouteDeps): ReadonlyMap<string, RelayRoute> {
  const deps = {
    need: d.need,
    log: d.log,
    logger: d.logger,
    timeoutMs: d.proxyTimeoutMs,
    bodyLimit: RELAY_JSON_BODY_LIMIT,
    drainMs: d.drainMs,
    placements: d.placements,
    bodyBudget: d.bodyBudget,
    bodyIdleMs: d.bodyIdleMs,
    parser: d.parser,
  }
  const llm = (path: string): RelayRoute => relayRoute(deps, { path, upstream: 'llm', upstreamPath: () => path })
  return new Map([
    ['/v1/chat/completions', llm('/v1/chat/completions')],
    ['/v1/completions', llm('/v1/completions')],
    [
      '/v1/embeddings',
      relayRoute(deps, {
        path: '/v1/embeddings',
        upstream: 'embeddings',
        upstreamPath: (up) => embeddingsPath(up.base),
      }),
    ],
  ])
}

/** The relayed routes on the router (the server has armed the body deadline already), and the merged model list. */
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
