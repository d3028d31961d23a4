import type { Router } from 'express'
import type { Logger } from '../core/logger'
import { requestState } from '../http/requestState'
import { sendJson } from '../http/respond'
import { checkKeyModel } from './consumerKeys'
import type { ModelLists } from './modelLists'
import { forwardJson, JSON_BODY_LIMIT } from './proxy'
import type { RawRoute } from './rawRoute'
import { embeddingsPath } from './search'
import type { Upstream, UpstreamName } from './upstreams'

/**
 * Where chat and completions wait while the llm is being swapped: resolves when the request may be
 * forwarded, throws (503 with Retry-After) when it may not, and gives up when `signal` aborts (the
 * client went away). `model` is the request's `model`, for swaps on demand.
 */
export interface LlmGate {
  admit(model: string | null, signal: AbortSignal): Promise<void>
}

export interface ProxyRouteDeps {
  readonly route: RawRoute
  readonly need: (name: UpstreamName) => Upstream
  readonly lists: ModelLists
  /** Chat and completions timeout (spec 1, 8: 30 minutes). */
  readonly proxyTimeoutMs: number
  readonly logger: Logger
  readonly gate?: LlmGate
}

/** The OpenAI-shaped JSON routes forwarded verbatim, and the merged model list. */
export function mountProxyRoutes(router: Router, d: ProxyRouteDeps): void {
  const forward = (p: string, name: 'llm' | 'embeddings') =>
    d.route(p, async (req, res, streamed) => {
      const up = d.need(name)
      await forwardJson(req, res, up, {
        path: name === 'embeddings' ? embeddingsPath(up.base) : p,
        timeoutMs: d.proxyTimeoutMs,
        bodyLimit: JSON_BODY_LIMIT,
        logger: d.logger,
        onStreamed: streamed,
        usage: requestState(res).usage,
        admit: async (body, signal) => {
          checkKeyModel(requestState(res).consumer, body.model)
          if (name === 'llm' && d.gate) await d.gate.admit(typeof body.model === 'string' ? body.model : null, signal)
        },
      })
    })
  router.post('/v1/chat/completions', forward('/v1/chat/completions', 'llm'))
  router.post('/v1/completions', forward('/v1/completions', 'llm'))
  router.post('/v1/embeddings', forward('/v1/embeddings', 'embeddings'))
  router.get(
    '/v1/models',
    d.route('/v1/models', async (_req, res) => sendJson(res, 200, await d.lists.openAiList())),
  )
}
