import { Command, CommanderError, Option } from 'commander'
import { loadConfig, type Config } from '../config/load'
import { adminTokenRejection, ensureAdminToken, rotateAdminToken } from '../app/adminToken'
import { systemClock } from '../lib/clock'
import { httpCall } from '../lib/httpClient'
import { createLogger, Redactor } from '../lib/logger'
import { ServiceDirectory } from '../cluster/serviceDirectory'
import { VERSION } from '../lib/version'
import { readableVersion } from '../../src-shared/version'
import { sshKeyView } from '../ssh/authorize'
import { HostKeyStore } from '../ssh/hostKeys'
import { ensureServiceKey } from '../ssh/keys'
import { SshPool } from '../ssh/pool'
import { doctorExitCode, formatDoctorLine, runDoctor } from './doctor'
import { doctorSources, formatDoctorSources, readEnvFile, type DoctorSources } from './doctorSources'
import { launcherDoctorChecks } from './launcherDoctor'
import { ModelCatalog } from '../models/catalog'
import { LLM_IMAGE } from '../models/launch'

/** Where the command line reads its environment and writes its output (tests capture both). */
export interface CliIo {
  readonly env: NodeJS.ProcessEnv
  out(text: string): void
  err(text: string): void
  /** Starts the daemon in this process (`tandem serve`); it keeps running after runCli returns. */
  serve?(env: NodeJS.ProcessEnv): Promise<void>
}

interface GlobalOptions {
  dataDir?: string
  envFile?: string
}

/** The environment a command reads: the process's, then --env-file's over it, then --data-dir. */
function effectiveEnv(
  io: CliIo,
  opts: GlobalOptions,
): { env: NodeJS.ProcessEnv; dataDirFrom: string; file: Record<string, string> } {
  const file = opts.envFile ? readEnvFile(opts.envFile) : {}
  const env: NodeJS.ProcessEnv = { ...io.env, ...file, ...(opts.dataDir ? { DATA_DIR: opts.dataDir } : {}) }
  const set = (v: string | undefined): boolean => v !== undefined && v.trim() !== ''
  const dataDirFrom = opts.dataDir
    ? '--data-dir'
    : set(file.DATA_DIR)
      ? `DATA_DIR in ${opts.envFile}`
      : set(io.env.DATA_DIR)
        ? 'DATA_DIR'
        : 'the default: DATA_DIR is not set'
  return { env, dataDirFrom, file }
}

/**
 * `tandem`: the daemon and its operator chores from a shell. Resolves to the exit status; `serve`
 * resolves once the daemon listens, and the process stays up for it.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let status = 0
  const program = buildProgram(io, (code) => (status = code))
  try {
    await program.parseAsync([...argv], { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode
    io.err(`tandem: ${err instanceof Error ? err.message : String(err)}\n`)
    return 1
  }
  return status
}

function buildProgram(io: CliIo, setStatus: (code: number) => void): Command {
  const program = new Command('tandem')
    .description('Tandem: control plane for a two-node GPU cluster and a licensing shop, on port 9999.')
    .version(readableVersion(VERSION), '-V, --version', 'print the version, as x.y.z (build r), and exit')
    .option(
      '--data-dir <dir>',
      'data directory (default: DATA_DIR, else /data when writable, else ~/.local/share/tandem)',
    )
    .option(
      '--env-file <file>',
      "settings as KEY=value lines, read as environment over the process's own (the demo writes one: demo.env)",
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError()
  const config = (): Config => {
    const cfg = loadConfig({ env: effectiveEnv(io, program.opts<GlobalOptions>()).env })
    for (const w of cfg.warnings) io.err(`warning: ${w}\n`)
    return cfg
  }
  /** The configuration and what it was read from (`tandem doctor` says both). */
  const configWithSources = (): { config: Config; sources: DoctorSources } => {
    const opts = program.opts<GlobalOptions>()
    const how = effectiveEnv(io, opts)
    const cfg = config()
    const choices = { dataDirFrom: how.dataDirFrom, envFile: opts.envFile ?? null, envFileValues: how.file }
    return { config: cfg, sources: doctorSources(cfg, choices) }
  }

  program
    .command('serve')
    .description('run the daemon headless: dashboard, API and gateway on PORT (default 9999)')
    .action(async () => {
      if (!io.serve) throw new Error('serve is not available here')
      await io.serve(effectiveEnv(io, program.opts<GlobalOptions>()).env)
    })

  program
    .command('admin-token')
    .description('print the admin token (the dashboard login and the Bearer token of the control API)')
    .option('--rotate', 'replace it with a new token; every admin session ends')
    // The name the daemon's refusal of a rejected token file gives (the log redacts "token --rotate" as a credential).
    .option('--reset', 'the same as --rotate: write a new token, also over a file the daemon rejected')
    .action(async (opts: { rotate?: boolean; reset?: boolean }) =>
      setStatus(await adminTokenCommand(config(), io, opts.rotate === true || opts.reset === true)),
    )

  program
    .command('ssh-key')
    .description("print Tandem's SSH public key and a ready-to-paste command per configured node")
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => setStatus(sshKeyCommand(config(), io, opts.json === true)))

  program
    .command('doctor')
    .description(
      'say which data directory, settings file and environment settings it read, then check each configured node over SSH (reachable, host key, docker, nvidia-smi, launcher) and the llm, asr and tts services; exit 1 when a check fails',
    )
    .addOption(new Option('--json', 'print the checks as JSON'))
    .action(async (opts: { json?: boolean }) => {
      const { config: cfg, sources } = configWithSources()
      setStatus(await doctorCommand(cfg, sources, io, opts.json === true))
    })

  return program
}

async function adminTokenCommand(config: Config, io: CliIo, rotate: boolean): Promise<number> {
  if (!rotate) {
    const res = ensureAdminToken(config.adminToken, config.paths.adminTokenFile)
    if (!res.ok) {
      io.err(`tandem: ${adminTokenRejection(res)}\n`)
      return 1
    }
    io.out(`${res.token}\n`)
    return 0
  }
  if (config.adminToken !== null) {
    io.err('tandem: ADMIN_TOKEN is set in the environment or the settings file; change it there to rotate it\n')
    return 1
  }
  const token = rotateAdminToken(config.paths.adminTokenFile, config.paths.sessionsFile)
  io.out(`${token}\n`)
  if (await daemonAnswers(config))
    io.err(
      `note: Tandem is running on port ${config.port}; restart it (e.g. systemctl restart tandem) so it uses the new token and every open session ends\n`,
    )
  return 0
}

/** Whether a daemon answers on this configuration's port (then it still holds the old token). */
async function daemonAnswers(config: Config): Promise<boolean> {
  const host = config.bind === '0.0.0.0' || config.bind === '::' || config.bind === '' ? '127.0.0.1' : config.bind
  const authority = host.includes(':') ? `[${host}]` : host
  try {
    const res = await httpCall(`http://${authority}:${config.port}/api/health`, { signal: AbortSignal.timeout(1500) })
    res.discard()
    return res.ok
  } catch {
    return false
  }
}

function sshKeyCommand(config: Config, io: CliIo, json: boolean): number {
  const key = ensureServiceKey(config.paths.sshDir, { warn: (m) => io.err(`warning: ${m}\n`) })
  const view = sshKeyView(key, config.nodes)
  if (json) {
    io.out(`${JSON.stringify(view, null, 2)}\n`)
    return 0
  }
  const lines = [view.public_key, `# fingerprint ${view.fingerprint}`]
  if (view.nodes.length === 0)
    lines.push(
      '# no node configured yet: set NODE1_HOST/NODE1_USER and NODE2_HOST/NODE2_USER to get a command per node',
    )
  for (const n of view.nodes)
    lines.push(
      '',
      `# ${n.node} (${n.user}@${n.host}:${n.port}): from a machine that can already log in there`,
      n.command,
      `# or on ${n.node} itself`,
      n.remote_command,
    )
  io.out(`${lines.join('\n')}\n`)
  return 0
}

async function doctorCommand(config: Config, read: DoctorSources, io: CliIo, json: boolean): Promise<number> {
  const key = ensureServiceKey(config.paths.sshDir, { warn: (m) => io.err(`warning: ${m}\n`) })
  const redactor = new Redactor()
  redactor.add(config.registryApiKey)
  const logger = createLogger({ redactor, level: 'error', sink: { write: (line) => io.err(`${line}\n`) } })
  const hostKeys = new HostKeyStore(
    config.paths.knownHosts,
    () => systemClock.now(),
    (m) => io.err(`warning: ${m}\n`),
  )
  const pool = new SshPool({ privateKey: key.privateKey, hostKeys, clock: systemClock, logger: logger.child('ssh') })
  try {
    const catalog = new ModelCatalog({ config, logger })
    const images = [LLM_IMAGE, ...catalog.list().flatMap((e) => (e.def.container ? [e.def.container] : []))]
    const [checks, launcher] = await Promise.all([
      runDoctor({ config, pool, services: new ServiceDirectory(config) }),
      launcherDoctorChecks({ config, pool, clock: systemClock, logger, images }),
    ])
    checks.push(...launcher)
    const code = doctorExitCode(checks)
    if (json) io.out(`${JSON.stringify({ version: VERSION, ok: code === 0, read, checks }, null, 2)}\n`)
    else {
      for (const line of formatDoctorSources(read)) io.out(`${line}\n`)
      for (const c of checks) io.out(`${formatDoctorLine(c)}\n`)
      const failed = checks.filter((c) => c.status === 'fail').length
      io.out(failed === 0 ? 'all checks passed\n' : `${failed} check${failed === 1 ? '' : 's'} failed\n`)
    }
    return code
  } finally {
    await pool.close()
  }
}
