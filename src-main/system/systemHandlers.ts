import type { Config } from '../config/load'
import { checkSettingChanges, nodeNames, settingsView, writeSettings } from '../config/load'
import type { SettingName } from '../config/settingSpecs'
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { HealthComponents, RestartOutcome, systemContract } from '../contract/system'
import type { JobRegistry } from '../platform/jobs'
import type { Clock } from '../lib/clock'
import type { Credentials } from '../app/credentials'
import type { UntrustedProxies } from '../platform/untrustedProxies'
import { redactUrlCredentials, type Logger } from '../lib/logger'
import { VERSION } from '../lib/version'

export interface SystemDeps {
  readonly config: Config
  readonly clock: Clock
  readonly logger: Logger
  readonly jobs: JobRegistry
  readonly credentials: Credentials
  /** Reverse proxies seen forwarding without being trusted: a warning beside the configuration's own. */
  readonly untrustedProxies: UntrustedProxies
  /** The state of parts that can be off while the rest runs (licensing, DATA_DIR's free space). */
  readonly components: () => Promise<HealthComponents>
  /** Rebuilds the services from the saved settings; missing where the host process cannot (then the page says what to run). */
  readonly restart?: () => Promise<RestartOutcome>
}

/** Where no in-process restart is wired, the operator restarts the process. */
export const PROCESS_RESTART_HINT =
  'Restart the Tandem process: the service unit (systemctl restart tandem), the container, or the desktop app.'

/** The system methods: health, configuration and settings, the admin session, and jobs. */
export function systemHandlers({
  config,
  clock,
  logger,
  jobs,
  credentials,
  untrustedProxies,
  components,
  restart,
}: SystemDeps): Handlers<typeof systemContract> {
  const startedAt = clock.now()
  return {
    health: async () => ({
      ok: true,
      version: VERSION,
      uptime_s: Math.round((clock.now() - startedAt) / 1000),
      components: await components(),
    }),
    getConfig: async () => publicConfig(config, untrustedProxies.warning()),
    saveSettings: async ({ values }) => {
      const res = writeSettings(config, values as Partial<Record<SettingName, string>>)
      if (res.errors.length > 0)
        throw new ApiError('bad_input', res.errors.map((e) => `${e.name}: ${e.message}`).join('; '))
      logger.info('settings saved', { names: res.saved })
      return { saved: res.saved, restart_required: res.saved.length > 0 }
    },
    checkSettings: async ({ values }) => ({ errors: checkSettingChanges(config, values) }),
    restartServices: async () => {
      if (!restart)
        throw new ApiError('conflict', `This Tandem cannot restart its services in-process. ${PROCESS_RESTART_HINT}`)
      return restart()
    },
    login: async ({ token }, ctx) => {
      credentials.verifyLogin(token, ctx.limitKey ?? 'ipc', ctx.clientIp ?? 'ipc')
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
}

function publicConfig(config: Config, proxyWarning: string | null) {
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
    chat_ui_url: config.chatUiUrl === null ? null : redactUrlCredentials(config.chatUiUrl),
    public_url: config.publicUrl === null ? null : redactUrlCredentials(config.publicUrl),
    data_dir: config.paths.dataDir,
    nodes: nodeNames(config).filter((n) => config.nodes[n] != null),
    settings: settingsView(config),
    roles: {
      node1: role(config.nodes.node1),
      node2: role(config.nodes.node2),
      llm: { node: 'node1' as const, port: config.llm.port, container: config.llm.container },
      asr: svc(config.asr),
      tts: svc(config.tts),
    },
    warnings: proxyWarning === null ? [...config.warnings] : [...config.warnings, proxyWarning],
  }
}
