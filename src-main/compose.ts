import { stateDirs, type Config } from './config/load'
import type { Contract, ContractHandlers } from './contract'
import type { RestartOutcome } from './contract/system'
import { JobRegistry } from './platform/jobs'
import { loadAdminToken } from './app/adminToken'
import { removeOrphanedTempFiles } from './lib/files'
import { systemClock, type Clock } from './lib/clock'
import { Credentials } from './app/credentials'
import type { AnyHandler } from './app/invoke'
import { Limits } from './platform/limits'
import { CallerScope } from './platform/callerScope'
import { UntrustedProxies } from './platform/untrustedProxies'
import { SessionStore } from './app/sessions'
import { ServiceDirectory } from './cluster/serviceDirectory'
import { systemHandlers } from './system/systemHandlers'
import { storageHealth } from './system/storageHealth'
import { docsHandlers } from './system/docsHandlers'
import { createLogger, Redactor, type Logger } from './lib/logger'
import { EventBus, eventHandlers } from './platform/eventBus'
import type { DomainModule } from './platform/domainModule'
import type { Core } from './app/core'
import { createNodesModule } from './nodes/module'
import { createModelsModule } from './models/module'
import { createServicesModule } from './services/module'
import { createUpdatesModule } from './updates/module'
import { createGatewayModule, type GatewayOptions } from './gateway/module'
import { ConsumerKeys } from './gateway/keys/consumerKeyStore'
import { licenseAccessKeys } from './gateway/keys/licenseAccessKeys'
import { DEEP_HEALTH_PROBES } from './gateway/deepHealthProbes'
import { createLicensingModule, type LicensingModule } from './licensing/module'
import { createMetricsModule } from './metrics/module'
import type { LicensingDb } from './licensing/db'
import { ACCESS_SALES_UNKNOWN } from './platform/accessKeys'

export interface CoreOptions {
  config: Config
  clock?: Clock
  logger?: Logger
  /** The host process's in-process restart (headless.ts), offered to the Settings page as "Restart to apply". */
  restart?: () => Promise<RestartOutcome>
  /** Gateway tuning (the benches switch usage accounting off to measure its cost). */
  gateway?: Partial<GatewayOptions>
}

export type { Core }

/** What metrics reads of licensing at scrape time: its database, and the access licenses by tier. */
function shopReads(licensing: LicensingModule) {
  return {
    licensingDb: (): LicensingDb | null => licensing.database?.() ?? null,
    access: () => licensing.accessByTier?.() ?? [],
  }
}

export async function createCore(opts: CoreOptions): Promise<Core> {
  const { config } = opts
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? createLogger({ redactor: new Redactor() })
  const redactor = logger.redactor
  // Before anything writes: temp files an interrupted atomic write (kill -9) left behind.
  for (const file of removeOrphanedTempFiles(stateDirs(config.paths)))
    logger.info('removed the temp file of an interrupted write', { file })
  const admin = loadAdminToken(config.adminToken, config.paths.adminTokenFile, logger)
  for (const secret of [admin.token, config.registryApiKey, ...config.consumerApiKeys, config.metricsToken])
    if (secret) redactor.add(secret)
  for (const w of config.warnings) logger.warn(w)

  const events = new EventBus(clock)
  const jobs = new JobRegistry(clock, redactor, events)
  const limits = new Limits({ clock, publicPerMinute: config.licensingRateLimit })
  const consumerKeys = ConsumerKeys.open(config.paths.dataDir, clock, logger.child('gateway'))
  const credentials = new Credentials({
    adminToken: admin.token,
    consumerKeys: config.consumerApiKeys,
    namedKeys: consumerKeys,
    metricsToken: config.metricsToken,
    limits,
    logger: logger.child('credentials'),
  })
  const sessions = new SessionStore({
    file: config.paths.sessionsFile,
    adminToken: admin.token,
    clock,
    logger: logger.child('sessions'),
  })
  const callers = new CallerScope()
  const untrustedProxies = new UntrustedProxies(logger.child('http'))
  const shared = { config, clock, logger, jobs, events, limits, callers }
  // Where llm, asr, tts, embeddings and vector live: worked out once, asked by models, services, updates and gateway.
  const services = new ServiceDirectory(config)
  const nodes = await createNodesModule(shared)
  // Idle unloading asks the gateway (built later) whether a placement still has requests in flight.
  let inFlightOf: (placementId: string) => number = () => 0
  const models = await createModelsModule({ ...shared, services, nodes, isBusy: (id) => inFlightOf(id) > 0 })
  const servicesModule = await createServicesModule({ ...shared, services, nodes, models, probes: DEEP_HEALTH_PROBES })
  const updates = createUpdatesModule({ ...shared, services, nodes, swap: models.swap, launcher: models.launcher })
  // Deep health (services domain) is the gateway's probe hook: a wedged upstream starts a real probe.
  const gateway = await createGatewayModule({
    ...shared,
    services,
    deepHealth: servicesModule.deepHealth,
    // Chat and completions go to the placement serving their model, waiting while a job touches it.
    router: models.router,
    consumerKeys,
    options: opts.gateway,
  })
  inFlightOf = gateway.inFlightOf
  // A tier that sells access gets its buyer a gateway key: licensing asks through the platform interface.
  const licensing = await createLicensingModule({ ...shared, accessKeys: licenseAccessKeys(consumerKeys) })
  followLicensing(licensing, consumerKeys, credentials)
  const engines = () => models.engineMetrics.pages()
  const shop = shopReads(licensing)
  const metrics = createMetricsModule({ events, clock, logger, requestLog: gateway.requestLog, ...shop, engines })
  const modules = [nodes, models, servicesModule, gateway, licensing, metrics] as DomainModule<Partial<Contract>>[]
  const storage = storageHealth({ dataDir: config.paths.dataDir, clock })

  const handlers = {
    ...systemHandlers({
      config,
      clock,
      logger,
      jobs,
      credentials,
      untrustedProxies,
      components: async () => ({ licensing: licensing.health(), storage: await storage() }),
      restart: opts.restart,
    }),
    ...nodes.handlers,
    ...models.handlers,
    ...servicesModule.handlers,
    ...updates.handlers,
    ...gateway.handlers,
    ...licensing.handlers,
    licValidate: metrics.countValidations(licensing.handlers.licValidate),
    ...eventHandlers(events),
    ...docsHandlers(config),
  } satisfies ContractHandlers

  return {
    config,
    clock,
    logger,
    jobs,
    events,
    adminToken: admin.token,
    adminTokenSource: admin.source,
    handlers,
    dispatcher: {
      handlers: handlers as unknown as Record<string, AnyHandler>,
      limits,
      logger,
      callers,
      dataDir: config.paths.dataDir,
    },
    modules,
    limits,
    credentials,
    sessions,
    callers,
    untrustedProxies,
    ...lifecycle(modules, jobs, events, logger),
  }
}

/**
 * The gateway's two questions to licensing, through the platform interfaces: whether a license's
 * key may still be used (LicenseStanding), and whether a tier sells access, when keyless requests
 * from outside the LAN are refused (AccessSales). While licensing is off, keys of licenses are
 * refused and the shop is taken to sell.
 */
function followLicensing(licensing: LicensingModule, consumerKeys: ConsumerKeys, credentials: Credentials): void {
  consumerKeys.followLicenses(licensing.standing ?? null)
  credentials.followSales(licensing.sales ?? ACCESS_SALES_UNKNOWN)
}

/** Starts the modules in order; stops them in reverse, and keeps going when one fails. */
function lifecycle(
  modules: readonly DomainModule<Partial<Contract>>[],
  jobs: JobRegistry,
  events: EventBus,
  logger: Logger,
): Pick<Core, 'start' | 'stop'> {
  let started = false
  return {
    async start() {
      for (const m of modules) await m.start?.()
      started = true
    },
    async stop() {
      await jobs.stopAll()
      events.close()
      if (!started) return
      for (const m of [...modules].reverse()) {
        try {
          await m.stop?.()
        } catch (err) {
          logger.error(`stopping ${m.name} failed`, { error: err })
        }
      }
      started = false
    },
  }
}
