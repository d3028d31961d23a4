import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import { isSettingName, SETTINGS, SETTING_NAMES, type SettingName, type SettingSpec } from './settingSpecs'
import { settingValidators } from './settingValidators'
import { settingGroup, settingLabel, settingRule, type SettingSource, type SettingView } from './settingView'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'
import { redactUrlCredentials } from '../lib/logger'
import { parseExtraNodes, type NodeTargets } from './nodes'

export { nodeNames, type NodeTargets } from './nodes'

export interface SshTarget {
  readonly host: string
  readonly user: string
  readonly port: number
}

export interface RoleService {
  /** Where the container runs (SSH); null when neither the role nor node2 is configured. */
  readonly ssh: SshTarget | null
  readonly container: string
  /** HTTP port of the service on its host. */
  readonly port: number
}

export interface DataPaths {
  readonly dataDir: string
  readonly settingsFile: string
  readonly adminTokenFile: string
  readonly sessionsFile: string
  readonly knownHosts: string
  readonly sshDir: string
  readonly connectivityLog: string
  readonly modelsOverrides: string
  readonly servicesOverrides: string
  readonly licensingDb: string
  readonly licensingKeyDir: string
  /** Rolling backups of the licensing database (0700; the files 0600). */
  readonly licensingBackupDir: string
}

export interface Config {
  readonly port: number
  readonly bind: string
  /** Explicit PUBLIC_URL, or null to derive it from the request host. */
  readonly publicUrl: string | null
  /** ADMIN_TOKEN from settings/env, or null to use the generated token file. */
  readonly adminToken: string | null
  readonly consumerApiKeys: readonly string[]
  /** Proxies whose X-Forwarded-* headers are believed (addresses or CIDRs). */
  readonly trustedProxies: readonly string[]
  /** The admin session cookie may call the browser playground's upload route on the consumer surface. */
  readonly playgroundSessionUploads: boolean
  readonly chatUiUrl: string | null
  /** Bearer token that may read /metrics (besides the admin credential); null = admin only. */
  readonly metricsToken: string | null
  /** node1, node2 (null when not configured), then node3… from NODES. */
  readonly nodes: NodeTargets
  readonly wolBroadcast: string
  /** Background probe interval in seconds; 0 = off. */
  readonly monitorIntervalS: number
  readonly llm: { readonly port: number; readonly container: string; readonly launcherDir: string }
  readonly asr: RoleService
  readonly tts: RoleService
  readonly registryApiKey: string | null
  readonly deepHealthIntervalS: number
  /** Reading each placement engine's own /metrics: seconds between reads (0 = off), and every family or the kept ones. */
  readonly engineMetrics: { readonly intervalS: number; readonly keepAll: boolean }
  /** Model catalog and swap (spec 1, 2.2 and 4.2). */
  readonly models: {
    readonly localRoots: readonly string[]
    readonly loadTimeoutS: number
    readonly holdS: number
    readonly rollback: boolean
    readonly onDemand: boolean
    /** Relaunch placements that stopped, when their nodes answer again (PLACEMENT_RECOVERY). */
    readonly recovery: boolean
    /** Minutes idle after which an on-demand placement is unloaded (PLACEMENT_IDLE_TTL_MIN). */
    readonly idleTtlMin: number
  }
  /** The gateway's upload and generation limits, in the settings' units. */
  readonly gatewayLimits: {
    readonly uploadMaxMb: number
    readonly uploadIdleS: number
    /** A relayed JSON body that sends nothing for this long is answered 408. */
    readonly bodyIdleS: number
    readonly spoolMb: number
    readonly diskFloorMb: number
    readonly timeoutMin: number
    /** Memory the relayed JSON bodies in progress may hold together. */
    readonly bodyBudgetMb: number
  }
  readonly embeddingsUrl: string | null
  readonly vectorUrl: string | null
  readonly scrubTerms: readonly string[]
  readonly rateSources: readonly string[]
  /** Licensing public API requests per minute per client address; 0 = unlimited. */
  readonly licensingRateLimit: number
  /** Origins a purchase's redirect_url may point at, besides PUBLIC_URL and the product's return URL prefix. */
  readonly redirectAllowlist: readonly string[]
  /** How long an unpaid checkout holds a capped discount code's use. */
  readonly discountReservationMs: number
  /** Validation log retention: days (0 = no age limit) and rows (0 = no row limit). */
  readonly validationLog: { readonly retentionDays: number; readonly maxRows: number }
  /** Rolling backups of the licensing database kept in `paths.licensingBackupDir`; 0 = none taken. */
  readonly licensingBackups: number
  readonly paths: DataPaths
  /** Each setting's effective raw value and where it came from. */
  readonly settings: Readonly<Record<SettingName, { value: string; source: SettingSource }>>
  /** Problems found while loading (malformed values, corrupt settings file); logged once at start. */
  readonly warnings: readonly string[]
}

/** `/data` where it exists and is writable, else ~/.local/share/tandem. */
export function defaultDataDir(): string {
  try {
    fs.accessSync('/data', fs.constants.W_OK)
    if (fs.statSync('/data').isDirectory()) return '/data'
  } catch {
    // not available: fall through
  }
  return path.join(os.homedir(), '.local', 'share', 'tandem')
}

const SettingsFileEntries = z.array(z.tuple([z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])]))

/** The file's entries as written, `__proto__` included (a zod record would drop it without a word). */
function parseSettingsFile(text: string): [string, string | number | boolean | null][] {
  const raw: unknown = JSON.parse(text)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object')
  return SettingsFileEntries.parse(Object.entries(raw))
}

export function readSettingsFile(file: string, warnings: string[]): Partial<Record<SettingName, string>> {
  const res = readStateFile(file, parseSettingsFile)
  if (res.kind === 'missing') return {}
  if (res.kind === 'corrupt') {
    warnings.push(replacedStateFileMessage('settings file', file, res, 'using defaults'))
    return {}
  }
  const out: Partial<Record<SettingName, string>> = {}
  for (const [k, v] of res.value) {
    if (!isSettingName(k)) {
      warnings.push(`settings file: unknown setting ${JSON.stringify(k)} ignored`)
      continue
    }
    out[k] = v === null ? '' : String(v)
  }
  return out
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv
  /** Overrides DATA_DIR (Electron passes userData). */
  dataDir?: string
}

type ResolvedSettings = Record<SettingName, { value: string; source: SettingSource }>

/** Each setting from the first source that has a usable value (environment, then file), else its default. */
function resolveSettings(
  env: NodeJS.ProcessEnv,
  fileValues: Partial<Record<SettingName, string>>,
  dataDir: string,
  warnings: string[],
): ResolvedSettings {
  const settings = {} as ResolvedSettings
  for (const name of SETTING_NAMES) {
    const spec: SettingSpec = SETTINGS[name]
    const candidates: [SettingSource, string | undefined][] = [
      ['environment', env[name]],
      ['file', fileValues[name]],
    ]
    let chosen: { value: string; source: SettingSource } = { value: spec.default, source: 'default' }
    for (const [source, raw] of candidates) {
      // Blank and null are "unset": they fall through to the next source.
      if (raw === undefined || isUnset(raw)) continue
      const value = raw.trim()
      const problem = settingProblem(name, value, dataDir)
      if (problem !== null) {
        const where = source === 'environment' ? 'environment' : 'settings file'
        warnings.push(
          `${name} from ${where} is invalid (${problem}); ${spec.secret ? 'value hidden; ' : `got ${redactUrlCredentials(JSON.stringify(value))}; `}using the default`,
        )
        continue
      }
      chosen = { value, source }
      break
    }
    settings[name] = chosen
  }
  return settings
}

const sshTarget = (host: string, user: string, port: number): SshTarget | null =>
  host !== '' && user !== '' ? { host, user, port } : null

/** Where asr or tts runs: its own host, user and SSH port, else node2's. */
function roleService(s: (n: SettingName) => string, prefix: 'ASR' | 'TTS'): RoleService {
  const host = s(`${prefix}_HOST`) || s('NODE2_HOST')
  const user = s(`${prefix}_USER`) || s('NODE2_USER')
  const ownPort = s(`${prefix}_SSH_PORT`)
  // A role on node2's host uses node2's SSH port unless it has its own.
  const sshPort = ownPort !== '' ? Number(ownPort) : host === s('NODE2_HOST') ? Number(s('NODE2_SSH_PORT')) : 22
  return { ssh: sshTarget(host, user, sshPort), container: s(`${prefix}_CONTAINER`), port: Number(s(`${prefix}_PORT`)) }
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env
  const warnings: string[] = []
  const dataDir = path.resolve(isUnset(env.DATA_DIR) ? (opts.dataDir ?? defaultDataDir()) : (env.DATA_DIR as string))
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const settingsFile = path.join(dataDir, 'settings.json')
  const fileValues = readSettingsFile(settingsFile, warnings)

  const settings = resolveSettings(env, fileValues, dataDir, warnings)

  const s = (n: SettingName): string => settings[n].value
  const num = (n: SettingName): number => Number(s(n))
  const orNull = (n: SettingName): string | null => (s(n) === '' ? null : s(n))
  const list = (n: SettingName): string[] =>
    s(n)
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '')

  const node1 = sshTarget(s('NODE1_HOST'), s('NODE1_USER'), num('NODE1_SSH_PORT'))
  const node2 = sshTarget(s('NODE2_HOST'), s('NODE2_USER'), num('NODE2_SSH_PORT'))
  const extra = parseExtraNodes(
    s('NODES'),
    [node1, node2].filter((t) => t !== null),
  )
  for (const p of extra.problems) warnings.push(`NODES: ${p}`)
  const role = (prefix: 'ASR' | 'TTS'): RoleService => roleService(s, prefix)

  const pathOr = (n: SettingName, fallback: string): string =>
    s(n) === '' ? path.join(dataDir, fallback) : path.resolve(dataDir, s(n))

  return {
    port: num('PORT'),
    bind: s('BIND'),
    publicUrl: orNull('PUBLIC_URL')?.replace(/\/+$/, '') ?? null,
    adminToken: orNull('ADMIN_TOKEN'),
    consumerApiKeys: list('CONSUMER_API_KEYS'),
    trustedProxies: list('TRUSTED_PROXIES'),
    playgroundSessionUploads: s('PLAYGROUND_SESSION_UPLOADS') === 'on',
    chatUiUrl: orNull('CHAT_UI_URL'),
    metricsToken: orNull('METRICS_TOKEN'),
    nodes: { node1, node2, ...extra.targets },
    wolBroadcast: s('WOL_BROADCAST'),
    monitorIntervalS: num('MONITOR_INTERVAL_S'),
    llm: { port: num('LLM_PORT'), container: s('LLM_CONTAINER'), launcherDir: s('LAUNCHER_DIR') },
    asr: role('ASR'),
    tts: role('TTS'),
    registryApiKey: orNull('REGISTRY_API_KEY'),
    deepHealthIntervalS: num('DEEP_HEALTH_INTERVAL_S'),
    engineMetrics: { intervalS: num('ENGINE_METRICS_INTERVAL_S'), keepAll: s('ENGINE_METRICS_FAMILIES') === 'all' },
    models: {
      localRoots: list('LOCAL_MODEL_ROOTS').map((r) => r.replace(/\/+$/, '') || '/'),
      loadTimeoutS: num('SWAP_LOAD_TIMEOUT_S'),
      holdS: num('SWAP_HOLD_S'),
      rollback: s('SWAP_ROLLBACK') === 'on',
      onDemand: s('SWAP_ON_DEMAND') === 'on',
      recovery: s('PLACEMENT_RECOVERY') === 'on',
      idleTtlMin: num('PLACEMENT_IDLE_TTL_MIN'),
    },
    gatewayLimits: {
      uploadMaxMb: num('GATEWAY_UPLOAD_MAX_MB'),
      uploadIdleS: num('GATEWAY_UPLOAD_IDLE_S'),
      bodyIdleS: num('GATEWAY_BODY_IDLE_S'),
      spoolMb: num('GATEWAY_SPOOL_MB'),
      diskFloorMb: num('GATEWAY_DISK_FLOOR_MB'),
      timeoutMin: num('GATEWAY_TIMEOUT_MIN'),
      bodyBudgetMb:
        settings.GATEWAY_BODY_BUDGET_MB.source === 'default'
          ? machineSizedBudgetMb(num('GATEWAY_BODY_BUDGET_MB'))
          : num('GATEWAY_BODY_BUDGET_MB'),
    },
    embeddingsUrl: orNull('EMBEDDINGS_URL')?.replace(/\/+$/, '') ?? null,
    vectorUrl: orNull('VECTOR_URL')?.replace(/\/+$/, '') ?? null,
    scrubTerms: list('SCRUB_TERMS'),
    rateSources: list('RATE_SOURCES').map((u) => u.replace(/\/+$/, '')),
    licensingRateLimit: num('LICENSING_RATE_LIMIT'),
    redirectAllowlist: list('REDIRECT_ALLOWLIST').map((u) => u.replace(/\/+$/, '')),
    discountReservationMs: num('DISCOUNT_RESERVATION_MINUTES') * 60_000,
    validationLog: { retentionDays: num('VALIDATION_LOG_RETENTION_DAYS'), maxRows: num('VALIDATION_LOG_MAX_ROWS') },
    licensingBackups: num('LICENSING_BACKUPS'),
    paths: {
      dataDir,
      settingsFile,
      adminTokenFile: path.join(dataDir, 'admin-token'),
      sessionsFile: path.join(dataDir, 'sessions.json'),
      knownHosts: path.join(dataDir, 'known_hosts.json'),
      sshDir: path.join(dataDir, 'ssh'),
      connectivityLog: pathOr('CONNECTIVITY_LOG', 'connectivity.json'),
      modelsOverrides: pathOr('MODELS_OVERRIDES', 'models-overrides.yaml'),
      servicesOverrides: pathOr('SERVICES_OVERRIDES', 'services-overrides.yaml'),
      licensingDb: path.join(dataDir, 'licensing.sqlite'),
      licensingKeyDir: path.join(dataDir, 'licensing'),
      licensingBackupDir: path.join(dataDir, 'backups'),
    },
    settings,
    warnings,
  }
}

/**
 * The default body budget on this machine: the setting's default, or an eighth of the memory when
 * that is less (a small home server keeps room for everything else), never below the setting's floor.
 */
function machineSizedBudgetMb(defaultMb: number): number {
  return Math.min(defaultMb, Math.max(16, Math.floor(os.totalmem() / (8 * 1024 * 1024))))
}

/** The folders Tandem writes its state files into: where orphaned temp files of atomic writes are looked for at start. */
export function stateDirs(paths: DataPaths): string[] {
  const files = [paths.connectivityLog, paths.modelsOverrides, paths.servicesOverrides]
  return [...new Set([paths.dataDir, paths.sshDir, paths.licensingKeyDir, ...files.map((f) => path.dirname(f))])]
}

/** The Settings view's list: secrets and passwords inside URLs masked, each with its source and whether the file may change it. */
export function settingsView(config: Config): SettingView[] {
  const saved = readSettingsFile(config.paths.settingsFile, [])
  const shown = SETTING_NAMES.filter((name) => (SETTINGS[name] as SettingSpec).unread !== true)
  return shown.map((name) => {
    const spec: SettingSpec = SETTINGS[name]
    const { value, source } = config.settings[name]
    const raw = saved[name]
    const inFile = raw === undefined || isUnset(raw) ? '' : raw.trim()
    const effectiveFromFile = source === 'file' ? value : ''
    const pending =
      source !== 'environment' && inFile !== effectiveFromFile ? (inFile === '' ? spec.default : inFile) : null
    return {
      name,
      value: spec.secret ? maskSecret(value) : redactUrlCredentials(value),
      source,
      editable: source !== 'environment',
      secret: spec.secret === true,
      group: settingGroup(spec),
      description: spec.description,
      kind: spec.kind,
      label: settingLabel(name, spec),
      help: spec.help ?? spec.description,
      range: spec.kind === 'port' ? [1, 65535] : spec.range ? [spec.range[0], spec.range[1]] : null,
      locked_reason:
        source === 'environment'
          ? `Set by the environment variable ${name} where Tandem is started; change it there and restart the process.`
          : null,
      pending: pending === null ? null : spec.secret ? maskSecret(pending) : redactUrlCredentials(pending),
    }
  })
}

export function maskSecret(value: string): string {
  return value === '' ? '' : '••••••••'
}

export interface SettingError {
  name: string
  message: string
}

/** What is wrong with each change, in words, before anything is written (the page shows these under the fields). */
export function checkSettingChanges(config: Config, changes: Readonly<Record<string, string>>): SettingError[] {
  const errors: SettingError[] = []
  for (const [name, raw] of Object.entries(changes)) {
    if (!isSettingName(name)) errors.push({ name, message: 'unknown setting' })
    else if (config.settings[name].source === 'environment')
      errors.push({ name, message: 'set by the environment; change it there' })
    else if (!isUnset(raw)) {
      const problem = settingProblem(name, raw.trim(), config.paths.dataDir)
      if (problem !== null) errors.push({ name, message: problem })
      // Loading skips a malformed entry; a save from the page refuses it, so it is fixed while in view.
      else if (name === 'NODES') {
        const entries = parseExtraNodes(raw, []).problems
        if (entries.length > 0) errors.push({ name, message: entries.join('; ') })
      }
    }
  }
  return errors
}

/**
 * Saves settings edited in the dashboard. Values fixed by the environment are refused; an empty
 * string removes the setting from the file. Each value is validated before anything is written.
 */
export function writeSettings(
  config: Config,
  changes: Partial<Record<SettingName, string>>,
): { saved: SettingName[]; errors: SettingError[] } {
  const errors = checkSettingChanges(config, changes as Record<string, string>)
  if (errors.length > 0) return { saved: [], errors }
  const next: Partial<Record<SettingName, string>> = { ...readSettingsFile(config.paths.settingsFile, []) }
  const saved: SettingName[] = []
  for (const [name, raw] of Object.entries(changes) as [SettingName, string][]) {
    if (isUnset(raw)) delete next[name]
    else next[name] = raw.trim()
    saved.push(name)
  }
  atomicWriteFile(config.paths.settingsFile, JSON.stringify(next, null, 2) + '\n', { mode: 0o600, role: 'settings' })
  return { saved, errors: [] }
}

/** Spec 000 §2.1 rule 2: blank and null (any case) are "unset", for every setting and DATA_DIR. */
export function isUnset(v: string | undefined): boolean {
  if (v === undefined) return true
  const t = v.trim()
  return t === '' || t.toLowerCase() === 'null'
}

/** Why a value cannot be used for a setting, or null when it can. */
function settingProblem(name: SettingName, value: string, dataDir: string): string | null {
  const ok = settingValidators[name].safeParse(value)
  if (!ok.success) return settingRule(SETTINGS[name]) ?? firstIssue(ok.error)
  if (SETTINGS[name].kind === 'path' && !isInsideDataDir(value, dataDir))
    return `must be inside the data directory (${dataDir}); a symlink out of it does not count`
  return null
}

/**
 * True when a path stays inside DATA_DIR after `..` is resolved and, for the part that exists,
 * symlinks are followed: a path setting must not aim Tandem's writes (rename, overwrite) at any
 * file on the machine.
 */
export function isInsideDataDir(value: string, dataDir: string): boolean {
  const lexical = path.resolve(dataDir, value)
  if (!isStrictlyWithin(lexical, dataDir)) return false
  const real = realpathOfExisting(lexical)
  const root = realpathOfExisting(dataDir)
  return real !== null && root !== null && isStrictlyWithin(real, root)
}

function isStrictlyWithin(p: string, root: string): boolean {
  const rel = path.relative(root, p)
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)
}

/** The real path of the deepest existing ancestor, with the rest appended; null for a dangling symlink. */
function realpathOfExisting(p: string): string | null {
  const rest: string[] = []
  let cur = p
  for (;;) {
    try {
      return path.join(fs.realpathSync(cur), ...rest.reverse())
    } catch {
      if (isSymlink(cur)) return null
      const parent = path.dirname(cur)
      if (parent === cur) return p
      rest.push(path.basename(cur))
      cur = parent
    }
  }
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink()
  } catch {
    return false
  }
}

function firstIssue(err: z.ZodError): string {
  return err.issues[0]?.message ?? 'invalid'
}
