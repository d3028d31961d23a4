import { loadConfig } from './config/load'
import { createCore, type Core } from './core/app'
import { createLogger, Redactor } from './core/logger'
import { startHttpServer, type RunningServer } from './http/listen'

export interface RunningDaemon {
  readonly core: Core
  readonly http: RunningServer
  stop(): Promise<void>
}

/** Builds the core from the environment, starts every service and the HTTP server. */
export async function startDaemon(opts: { env?: NodeJS.ProcessEnv; dataDir?: string } = {}): Promise<RunningDaemon> {
  const config = loadConfig({ env: opts.env, dataDir: opts.dataDir })
  const logger = createLogger({ redactor: new Redactor(), level: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'info' })
  const core = await createCore({ config, logger })
  await core.start()
  let http: RunningServer
  try {
    http = await startHttpServer(core, { port: config.port, host: config.bind })
  } catch (err) {
    await core.stop()
    throw err
  }
  let stopping: Promise<void> | null = null
  return {
    core,
    http,
    stop: () =>
      (stopping ??= (async () => {
        await http.close()
        await core.stop()
      })()),
  }
}

export async function runHeadless(opts: { env?: NodeJS.ProcessEnv } = {}): Promise<void> {
  const daemon = await startDaemon({ env: opts.env })
  const { core, http } = daemon
  const where = core.adminTokenSource === 'file' ? `in ${core.config.paths.adminTokenFile}` : 'from ADMIN_TOKEN'
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
