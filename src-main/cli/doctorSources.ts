import fs from 'node:fs'
import { parseEnv } from 'node:util'
import type { Config } from '../config/load'
import { SETTING_NAMES } from '../config/settingSpecs'

/**
 * What `tandem doctor` read before it checked anything: the data directory and how it was chosen,
 * the settings file and the settings it gave, and the settings the environment gave (names only:
 * some values are secrets). Without it a doctor run against the wrong directory looks like a
 * cluster with nothing configured.
 */
export interface DoctorSources {
  readonly data_dir: string
  /** `--data-dir`, `DATA_DIR`, `DATA_DIR in <env file>` or `the default`. */
  readonly data_dir_from: string
  readonly settings_file: string
  readonly settings_file_found: boolean
  /** Settings whose value came from the settings file. */
  readonly from_file: readonly string[]
  /** Settings whose value came from the environment (the process's and `--env-file`'s). */
  readonly from_environment: readonly string[]
  readonly env_file: string | null
  /** Of `from_environment`, those `--env-file` set. */
  readonly from_env_file: readonly string[]
}

/** An `--env-file`: KEY=value lines (as Node's and docker's), read as environment over the process's own. */
export function readEnvFile(file: string): Record<string, string> {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new Error(`--env-file ${file}: ${(err as Error).message}`, { cause: err })
  }
  return parseEnv(text) as Record<string, string>
}

export interface SourceChoices {
  readonly dataDirFrom: string
  readonly envFile: string | null
  readonly envFileValues: Readonly<Record<string, string>>
}

export function doctorSources(config: Config, how: SourceChoices): DoctorSources {
  const from = (source: string): string[] => SETTING_NAMES.filter((n) => config.settings[n].source === source)
  const fromEnvironment = from('environment')
  return {
    data_dir: config.paths.dataDir,
    data_dir_from: how.dataDirFrom,
    settings_file: config.paths.settingsFile,
    settings_file_found: fs.existsSync(config.paths.settingsFile),
    from_file: from('file'),
    from_environment: fromEnvironment,
    env_file: how.envFile,
    from_env_file: fromEnvironment.filter((n) => Object.hasOwn(how.envFileValues, n)),
  }
}

const settingsCount = (n: number): string => `${n} setting${n === 1 ? '' : 's'}`
const named = (names: readonly string[]): string => (names.length === 0 ? '' : ` (${names.join(', ')})`)

/** The `[read]` lines above the checks. */
export function formatDoctorSources(s: DoctorSources): string[] {
  const file = s.settings_file_found
    ? `${s.settings_file}: ${settingsCount(s.from_file.length)}${named(s.from_file)}`
    : `${s.settings_file}: not there (built-in defaults and the environment only)`
  const fromEnvFile = s.env_file === null ? '' : `; ${s.from_env_file.length} of them from --env-file ${s.env_file}`
  const env =
    s.from_environment.length === 0
      ? 'no settings set'
      : `${settingsCount(s.from_environment.length)}${named(s.from_environment)}${fromEnvFile}`
  return [
    `[read] data directory: ${s.data_dir} (${s.data_dir_from})`,
    `[read] settings file: ${file}`,
    `[read] environment: ${env}`,
  ]
}
