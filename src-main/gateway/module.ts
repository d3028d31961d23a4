import path from 'node:path'
import type { Router } from 'express'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import type { gatewayContract } from '../contract/gateway'
import type { consumerKeysContract } from '../contract/consumerKeys'
import type { ModelRouter } from '../models/types'
import type { CoreDeps, DomainModule } from '../platform/domainModule'
import type { ServiceDirectory } from '../cluster/serviceDirectory'
import { mountAudioRoutes } from './audio/audioRoutes'
import type { DeepHealthHook, ProbedService } from '../services/types'
import { ConsumerKeys } from './keys/consumerKeyStore'
import { infoHandlers } from './handlers'
import { consumerKeyHandlers } from './keys/keyHandlers'
import { KeyUsageStore, usageCounts } from './keys/keyUsage'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { WriteOutage } from '../lib/writeOutage'
import { ModelLists } from './relay/modelLists'
import { playgroundHandlers } from './playground'
import { BodyBudget, bodyBudgetLimits } from './relay/bodyBudget'
import { PlacementUpstreams, POOL_SWEEP_MS } from './relay/placementUpstreams'
import { mountProxyRoutes, relayRoutes } from './relay/proxyRoutes'
import { rawRoute } from './relay/rawRoute'
import { RequestLog } from './relay/requestLog'
import { ScrubSessions } from './scrub/scrub'
import { VoiceAliases } from './audio/speech'
import { UploadSpool } from './audio/spool'
import {
  DEFAULT_UPSTREAM_TIMEOUTS,
  Upstreams,
  type Upstream,
  type UpstreamName,
  type UpstreamTimeouts,
} from './relay/upstreams'
import { RelayBodyParser } from './relay/relayBodyParser'
import { GATEWAY_JSON_DEPTH, MiB } from './relay/wire'

export type GatewayModule = DomainModule<typeof gatewayContract & typeof consumerKeysContract> & {
  /** The request log (tests and the bench read it). */
  readonly requestLog: RequestLog
  /** Requests in flight on a placement (the placements' idle unloading asks it). */
  readonly inFlightOf: (placementId: string) => number
}

export interface GatewayOptions {
  /** Chat and completions timeout (spec 1, 8: 30 minutes). */
  proxyTimeoutMs: number
  /** Largest upload (413 beyond). */
  uploadMaxBytes: number
  /** No upload bytes for this long → 408; the upload and its spool file are dropped. */
  uploadIdleMs: number
  /** Parent of the folder where diarization uploads are spooled (each deleted after its request). */
  uploadRoot: string
  /** Bytes all uploads in progress may hold in the spool together (503 + Retry-After beyond). */
  spoolBudgetBytes: number
  /** Free space DATA_DIR keeps: an upload that would leave less is refused with 507. */
  diskFloorBytes: number
  /** Memory the relayed JSON bodies in progress may hold together (503 + Retry-After beyond). */
  bodyBudgetBytes: number
  /** A relayed JSON body that sends nothing for this long is answered 408 and released. */
  bodyIdleMs: number
  scrubTtlMs: number
  scrubCap: number
  requestLogSize: number
  /** Usage accounting per request and per key (off only to measure its cost). */
  usageAccounting: boolean
  /** Upstream connect, head and body-idle limits; the head's defaults to the generation timeout. */
  upstreamTimeouts?: Partial<UpstreamTimeouts>
}

export interface GatewayDeps extends CoreDeps {
  /** Where each upstream lives. */
  readonly services: ServiceDirectory
  /** Filled by the services domain (deep health); the gateway only asks for probes. */
  readonly deepHealth: DeepHealthHook
  /**
   * Which placement serves a request's `model`, holding it while a placement job touches it (the
   * models domain fills it); without it chat and completions go to the llm service.
   */
  readonly router?: ModelRouter
  /** Named consumer keys (built with the credentials, which check them); opened here when not given. */
  readonly consumerKeys?: ConsumerKeys
  readonly options?: Partial<GatewayOptions>
}

/** How often expired scrub sessions are dropped when no scrub or rehydrate comes to drop them. */
const SCRUB_SWEEP_MS = 60_000
/** A body's JSON.parse in the worker: seconds for the largest body the budget admits, so this only catches a stuck worker. */
const BODY_PARSE_TIMEOUT_MS = 60_000

/** The gateway's options: limits from Settings (GATEWAY_*), the rest fixed; `given` (tests) wins. */
export function gatewayOptions(config: Config, given: Partial<GatewayOptions> = {}): GatewayOptions {
  const limits = config.gatewayLimits
  return {
    proxyTimeoutMs: limits.timeoutMin * 60_000,
    uploadMaxBytes: limits.uploadMaxMb * MiB,
    uploadIdleMs: limits.uploadIdleS * 1000,
    // Under DATA_DIR, not /tmp: /tmp is often RAM, and an upload can be gigabytes.
    uploadRoot: path.join(config.paths.dataDir, 'tmp'),
    spoolBudgetBytes: limits.spoolMb * MiB,
    diskFloorBytes: limits.diskFloorMb * MiB,
    bodyBudgetBytes: limits.bodyBudgetMb * MiB,
    bodyIdleMs: limits.bodyIdleS * 1000,
    scrubTtlMs: 60 * 60_000,
    scrubCap: 10_000,
    requestLogSize: 500,
    usageAccounting: true,
    ...given,
  }
}

/** Usage per key per hour beside the keys (none while their database is unavailable); a refused write is told once per outage. */
function keyUsageStore(keys: ConsumerKeys, clock: Clock, logger: Logger, dataDir: string): KeyUsageStore | null {
  const db = keys.database
  if (db === null) return null
  const outage = new WriteOutage({
    logger,
    clock,
    dataDir,
    what: 'consumer key usage',
    meanwhile: 'usage and last-used times are kept in memory and written when there is room',
  })
  // One batch for the hourly usage, the license keys' period usage and last-used times.
  const beforeFlush = () => {
    keys.persistLastUsed()
    keys.licenses.periods?.write()
  }
  return new KeyUsageStore(db, clock, beforeFlush, outage)
}

/** Composition of the /v1 proxy, speech, transcription, diarization, redaction, embeddings and search. */
export async function createGatewayModule(deps: GatewayDeps): Promise<GatewayModule> {
  const { config, clock, services } = deps
  const logger = deps.logger.child('gateway')
  const opts = gatewayOptions(config, deps.options)
  const timeouts: UpstreamTimeouts = {
    ...DEFAULT_UPSTREAM_TIMEOUTS,
    headersMs: opts.proxyTimeoutMs,
    ...opts.upstreamTimeouts,
  }
  const upstreams = new Upstreams(services, timeouts)
  // A relayed request failing on a placement's engine asks deep health to probe that placement.
  const placements = deps.router
    ? new PlacementUpstreams(deps.router, timeouts, (subject, reason) => deps.deepHealth.requestProbe(subject, reason))
    : undefined
  let poolSweep: NodeJS.Timeout | undefined
  const need = (name: UpstreamName): Upstream => {
    const up = upstreams.get(name)
    if (!up) throw new ApiError('unavailable', services.get(name).hint ?? `${name} is not configured`)
    return up
  }
  const log = new RequestLog(clock, opts.requestLogSize, opts.usageAccounting)
  const keys = deps.consumerKeys ?? ConsumerKeys.open(config.paths.dataDir, clock, logger)
  const usage = keyUsageStore(keys, clock, logger, config.paths.dataDir)
  if (usage && opts.usageAccounting)
    log.observe((entry, used, who) => {
      if (who?.kind !== 'key') return
      const counts = usageCounts(entry, used)
      usage.record(who.id, counts)
      keys.countPeriod(who.id, used?.model ?? `(default) ${entry.path}`, counts)
    })
  const scrubber = new ScrubSessions(clock, config.scrubTerms, opts.scrubTtlMs, opts.scrubCap)
  let scrubSweep: NodeJS.Timeout | undefined
  const modelRouter = deps.router
  const lists = new ModelLists(need, clock, logger, modelRouter && (() => modelRouter.placed()))
  const voices = VoiceAliases.fromSetting(
    config.settings.TTS_VOICE_ALIASES.value,
    async () => (await lists.ttsVoices()).map((v) => v.id),
    (message) => logger.warn(message),
  )
  const spool = UploadSpool.open(
    opts.uploadRoot,
    { budgetBytes: opts.spoolBudgetBytes, diskFloorBytes: opts.diskFloorBytes },
    logger,
  )
  const probe = (service: ProbedService) => (reason: string) => deps.deepHealth.requestProbe(service, reason)
  const route = rawRoute({ log, logger, drainMs: opts.uploadIdleMs })
  const bodyBudget = new BodyBudget(bodyBudgetLimits(opts.bodyBudgetBytes))
  const parser = new RelayBodyParser({ maxDepth: GATEWAY_JSON_DEPTH, timeoutMs: BODY_PARSE_TIMEOUT_MS })
  const relayed = relayRoutes({
    need,
    log,
    proxyTimeoutMs: opts.proxyTimeoutMs,
    drainMs: opts.uploadIdleMs,
    logger,
    placements,
    bodyBudget,
    bodyIdleMs: opts.bodyIdleMs,
    parser,
  })

  return {
    name: 'gateway',
    handlers: {
      ...infoHandlers({ config, services, need, scrubber, lists, voices, log, keys }),
      ...consumerKeyHandlers({ keys, usage, legacyKeys: config.consumerApiKeys.length, clock }),
      ...playgroundHandlers({ need, lists, voices, spool, probe, log, placements }),
    },
    requestLog: log,
    inFlightOf: (id) => placements?.inFlightOf(id) ?? 0,
    mountRoutes(router: Router) {
      mountProxyRoutes(router, relayed, { route, lists })
      mountAudioRoutes(router, {
        route,
        need,
        lists,
        voices,
        spool,
        uploads: { maxBytes: opts.uploadMaxBytes, idleMs: opts.uploadIdleMs },
        proxyTimeoutMs: opts.proxyTimeoutMs,
        logger,
        probe,
      })
    },
    start() {
      usage?.start()
      scrubSweep ??= setInterval(() => scrubber.expire(), SCRUB_SWEEP_MS).unref()
      if (placements) poolSweep ??= setInterval(() => placements.sweep(), POOL_SWEEP_MS).unref()
    },
    stop() {
      if (scrubSweep) clearInterval(scrubSweep)
      scrubSweep = undefined
      if (poolSweep) clearInterval(poolSweep)
      poolSweep = undefined
      placements?.destroy()
      parser.close()
      usage?.stop()
      keys.close()
      upstreams.destroy()
      spool.remove()
    },
  }
}
