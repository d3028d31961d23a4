import type { Config } from '../config/load'
import { settingsView, writeSettings } from '../config/load'
import type { SettingName } from '../config/schema'
import type { Contract, ContractHandlers } from '../contract'
import { ApiError } from '../contract/errors'
import type { Handlers } from '../contract/define'
import type { systemContract } from '../contract/system'
import { JobRegistry } from '../jobs/registry'
import { ensureAdminToken, secretEquals } from './adminToken'
import { systemClock, type Clock } from './clock'
import { RateLimiter } from './rateLimit'
import { createLogger, Redactor, type Logger } from './logger'
import type { DomainModule } from './module'
import { VERSION } from './version'
import { createNodesModule } from '../nodes/module'
import { createGatewayModule } from '../gateway/module'
import { loggingDeepHealth } from '../gateway/deepHealth'
import { createLicensingModule } from '../licensing/module'

export interface CoreOptions {
  config: Config
  clock?: Clock
  logger?: Logger
}

/** Everything the process runs, built from Config. HTTP and IPC adapters sit on top of it. */
export interface Core {
  readonly config: Config
  readonly clock: Clock
  readonly logger: Logger
  readonly jobs: JobRegistry
  readonly adminToken: string
  readonly adminTokenSource: 'setting' | 'file'
  readonly handlers: ContractHandlers
  readonly modules: readonly DomainModule<Partial<Contract>>[]
  /** Compares a presented credential with the admin token in constant time. */
  isAdminToken(candidate: string): boolean
  start(): Promise<void>
  stop(): Promise<void>
}

export async function createCore(opts: CoreOptions): Promise<Core> {
  const { config } = opts
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? createLogger({ redactor: new Redactor() })
  const redactor = logger.redactor
  const admin = ensureAdminToken(config.adminToken, config.paths.adminTokenFile)
  redactor.add(admin.token)
  redactor.add(config.registryApiKey)
  for (const k of config.consumerApiKeys) redactor.add(k)
  for (const w of config.warnings) logger.warn(w)

  const jobs = new JobRegistry(clock, redactor)
  // Five failed logins per address, then one more every 12 s.
  const loginLimiter = new RateLimiter({ capacity: 5, refillPerSecond: 1 / 12, clock })
  const startedAt = clock.now()

  const system: Handlers<typeof systemContract> = {
    health: async () => ({ ok: true, version: VERSION, uptime_s: Math.round((clock.now() - startedAt) / 1000) }),
    getConfig: async () => publicConfig(config),
    saveSettings: async ({ values }) => {
      const res = writeSettings(config, values as Partial<Record<SettingName, string>>)
      if (res.errors.length > 0)
        throw new ApiError('bad_input', res.errors.map((e) => `${e.name}: ${e.message}`).join('; '))
      logger.info('settings saved', { names: res.saved })
      return { saved: res.saved, restart_required: res.saved.length > 0 }
    },
    login: async ({ token }, ctx) => {
      const who = ctx.clientIp ?? 'ipc'
      if (loginLimiter.available(who) < 1) {
        const wait = loginLimiter.retryAfterSeconds(who)
        throw new ApiError('rate_limited', `too many failed logins; try again in ${wait} s`, {
          headers: { 'Retry-After': String(wait) },
        })
      }
      if (!secretEquals(token, admin.token)) {
        loginLimiter.take(who)
        logger.warn('failed login', { from: who })
        throw new ApiError('unauthorized', 'wrong admin token')
      }
      loginLimiter.reset(who)
      ctx.session.begin()
      return { ok: true }
    },
    logout: async (_in, ctx) => {
      ctx.session.end()
      return { ok: true }
    },
    session: async (_in, ctx) => ({ authenticated: ctx.session.authenticated }),
    listJobs: async ({ kind }) => jobs.list(kind),
    getJob: async ({ id }) => jobs.get(id),
    streamJob: ({ id, after }, ctx) => {
      jobs.get(id) // 404 before the stream opens
      return jobs.events(id, after ?? 0, ctx.signal)
    },
    cancelJob: async ({ id }) => jobs.cancel(id),
  }

  const shared = { config, clock, logger, jobs }
  const nodes = await createNodesModule(shared)
  // Deep health (services domain) replaces this interim hook; it logs and records probe requests.
  const gateway = await createGatewayModule({
    ...shared,
    nodes,
    deepHealth: loggingDeepHealth(logger.child('deep-health'), nodes.connectivity, () => clock.now()),
  })
  const licensing = await createLicensingModule(shared)
  const modules = [nodes, gateway, licensing] as DomainModule<Partial<Contract>>[]

  const handlers = {
    ...system,
    ...nodes.handlers,
    ...gateway.handlers,
    ...licensing.handlers,
  } satisfies ContractHandlers

  let started = false
  return {
    config,
    clock,
    logger,
    jobs,
    adminToken: admin.token,
    adminTokenSource: admin.source,
    handlers,
    modules,
    isAdminToken: (candidate) => secretEquals(candidate, admin.token),
    async start() {
      for (const m of modules) await m.start?.()
      started = true
    },
    async stop() {
      await jobs.stopAll()
      if (!started) return
      // Stop in reverse order of start, and keep going when one fails.
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

function publicConfig(config: Config) {
  const role = (t: { host: string; user: string; port: number } | null) => ({
    host: t?.host ?? '',
    user: t?.user ?? '',
    ssh_port: t?.port ?? 22,
    configured: t !== null,
  })
  const svc = (r: Config['asr']) => ({
    host: r.ssh?.host ?? '',
    user: r.ssh?.user ?? '',
    container: r.container,
    port: r.port,
    configured: r.ssh !== null,
  })
  return {
    name: 'Tandem' as const,
    version: VERSION,
    chat_ui_url: config.chatUiUrl,
    public_url: config.publicUrl,
    data_dir: config.paths.dataDir,
    settings: settingsView(config),
    roles: {
      node1: role(config.nodes.node1),
      node2: role(config.nodes.node2),
      llm: { node: 'node1' as const, port: config.llm.port, container: config.llm.container },
      asr: svc(config.asr),
      tts: svc(config.tts),
    },
    warnings: [...config.warnings],
  }
}
