import { loadConfig } from './config/load'
import { ApiError } from './contract/errors'
import type { RestartOutcome } from './contract/system'
import { createCore, type Core } from './compose'
import { PROCESS_RESTART_HINT } from './system/systemHandlers'
import { createLogger, Redactor } from './lib/logger'
import { startHttpServer, type RunningServer } from './http/listen'

export interface RunningDaemon {
  /** The core serving now (a restart replaces it). */
  readonly core: Core
  readonly http: RunningServer
  /** Stops every service, re-reads the configuration and starts a new core behind the same listener. */
  restart(): Promise<RestartOutcome>
  /** Called with each new core after a restart (the desktop re-binds its IPC). */
  onRestart(listener: (core: Core) => void): void
  stop(): Promise<void>
}

/** Settings the listening socket holds: only a new process applies them. */
const LISTENER_SETTINGS = ['PORT', 'BIND'] as const

/** Builds the core from the environment, starts every service and the HTTP server. */
export async function startDaemon(opts: { env?: NodeJS.ProcessEnv; dataDir?: string } = {}): Promise<RunningDaemon> {
  const config = loadConfig({ env: opts.env, dataDir: opts.dataDir })
  const logger = createLogger({ redactor: new Redactor(), level: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'info' })
  const listeners: ((core: Core) => void)[] = []
  let restarting: Promise<RestartOutcome> | null = null
  const restart = (): Promise<RestartOutcome> => (restarting ??= restartCore().finally(() => (restarting = null)))
  let core = await createCore({ config, logger, restart })
  await core.start()
  let http: RunningServer
  try {
    http = await startHttpServer(core, { port: config.port, host: config.bind })
  } catch (err) {
    await core.stop()
    throw err
  }

  async function restartCore(): Promise<RestartOutcome> {
    // Stopping the services cancels jobs: a download or swap half done is not thrown away for a setting.
    const busy = core.jobs.list().find((j) => j.state === 'running')
    if (busy) throw new ApiError('conflict', `${busy.title} is running (${busy.id}); restart when it has finished`)
    const next = loadConfig({ env: opts.env, dataDir: opts.dataDir })
    const before = core.config
    const needed = LISTENER_SETTINGS.filter((n) => next.settings[n].value !== config.settings[n].value)
    logger.info('restarting services to apply settings')
    await core.stop()
    let fresh: Core
    let fellBack = false
    try {
      fresh = await createCore({ config: next, logger, restart })
    } catch (err) {
      // The new settings could not be built: serve again with the ones that worked.
      logger.error('restart with the saved settings failed; starting again with the previous ones', { error: err })
      fresh = await createCore({ config: before, logger, restart })
      fellBack = true
    }
    await fresh.start()
    core = fresh
    http.replaceCore(fresh)
    for (const l of listeners) l(fresh)
    if (fellBack)
      throw new ApiError(
        'unavailable',
        'the services could not start with the saved settings (the log says why); they run again with the previous ones',
      )
    return {
      restarted: true,
      process_restart_needed: [...needed],
      process_restart_hint:
        needed.length === 0
          ? null
          : `${needed.join(' and ')} apply when the process starts again (it keeps listening on ${config.bind}:${http.port} until then). ${PROCESS_RESTART_HINT}`,
    }
  }

  let stopping: Promise<void> | null = null
  return {
    get core() {
      return core
    },
    http,
    restart,
    onRestart: (listener) => void listeners.push(listener),
    stop: () =>
      (stopping ??= (async () => {
        await restarting?.catch(() => undefined)
        await http.close()
        await core.stop()
      })()),
  }
}

export async function runHeadless(opts: { env?: NodeJS.ProcessEnv } = {}): Promise<void> {
  const daemon = await startDaemon({ env: opts.env })
  const { core, http } = daemon
  const where =
    core.adminToken === null
      ? `in ${core.config.paths.adminTokenFile} REJECTED: no admin login until a new one is set (see the error above)`
      : core.adminTokenSource === 'file'
        ? `in ${core.config.paths.adminTokenFile}`
        : 'from ADMIN_TOKEN'
  core.logger.info(`Tandem listening on ${http.url} (bind ${core.config.bind}:${http.port}); admin token ${where}`)
  const shutdown = (signal: string): void => {
    core.logger.info(`${signal}: stopping`)
    daemon.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        core.logger.error('stop failed', { error: err })
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => shutdown('SIGTERM'))
  process.once('SIGINT', () => shutdown('SIGINT'))
}
