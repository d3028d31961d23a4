import type { Router } from 'express'
import { Registry } from 'prom-client'
import type { Handler } from '../contract/define'
import type { licensingContract } from '../contract/licensing'
import type { Clock } from '../lib/clock'
import type { EventBus } from '../platform/eventBus'
import type { Logger } from '../lib/logger'
import type { DomainModule } from '../platform/domainModule'
import type { RequestLog } from '../gateway/types'
import type { AccessTierTotals, LicensingDb } from '../licensing/types'
import { sendError } from '../http/respond'
import { ApiError } from '../contract/errors'
import { clusterMetrics } from './clusterMetrics'
import { gatewayMetrics } from './gatewayMetrics'
import { accessMetrics, licensingMetrics } from './licensing'
import { federate, type EnginePage } from './federation'

type ValidateHandler = Handler<(typeof licensingContract)['licValidate']>

export type MetricsModule = DomainModule<Record<string, never>> & {
  readonly registry: Registry
  /** The validate handler, counting each answer by result. */
  countValidations(validate: ValidateHandler): ValidateHandler
}

export interface MetricsDeps {
  readonly events: EventBus
  readonly clock: Clock
  readonly logger: Logger
  readonly requestLog: RequestLog
  /** The licensing database, or null while licensing is off. */
  readonly licensingDb: () => LicensingDb | null
  /** The access licenses' current periods by tier (licensing answers); absent: none. */
  readonly access?: () => readonly AccessTierTotals[]
  /** Each placement engine's last page (the models domain reads them); absent: none federated. */
  readonly engines?: () => readonly EnginePage[]
}

/**
 * Prometheus metrics (text exposition) at GET /metrics, behind METRICS_TOKEN or the admin
 * credential (http/surfaces.ts). Cluster metrics follow the event bus, gateway metrics the request
 * log, shop metrics are queried from the licensing database when scraped.
 */
export function createMetricsModule(deps: MetricsDeps): MetricsModule {
  const registry = new Registry()
  const registers = [registry]
  const unsubscribe = deps.events.subscribe(clusterMetrics(registers))
  deps.requestLog.observe(gatewayMetrics(registers, () => deps.requestLog.openStreams))
  const shop = licensingMetrics(registers, deps.licensingDb, deps.clock)
  accessMetrics(registers, deps.access ?? (() => []))
  const logger = deps.logger.child('metrics')
  /** The engine families left out, each logged once. */
  const said = new Set<string>()

  return {
    name: 'metrics',
    handlers: {},
    registry,
    countValidations: (validate) => async (input, ctx) => {
      const answer = await validate(input, ctx)
      shop.countValidation(answer.ok, answer.reason)
      return answer
    },
    mountRoutes(router: Router) {
      router.get('/metrics', (_req, res) => {
        registry.metrics().then(
          (own) => {
            const text = own + federated(registry, deps.engines?.() ?? [], logger, said)
            res.setHeader('content-type', registry.contentType)
            res.setHeader('cache-control', 'no-store')
            res.end(text)
          },
          (err: unknown) => {
            logger.error('rendering /metrics failed', { error: err })
            sendError(res, new ApiError('internal', 'metrics could not be rendered'))
          },
        )
      })
    },
    stop() {
      unsubscribe()
    },
  }
}

/** The engines' families after Tandem's own; a family dropped is logged once per reason. */
function federated(registry: Registry, pages: readonly EnginePage[], logger: Logger, said: Set<string>): string {
  const reserved = new Set(registry.getMetricsAsArray().map((m) => m.name))
  const { text, dropped } = federate(pages, reserved)
  for (const d of dropped) {
    const key = `${d.placement} ${d.family} ${d.reason}`
    if (said.has(key) || said.size > 1000) continue
    said.add(key)
    logger.warn('an engine metric family was left out of /metrics', { ...d })
  }
  return text
}
