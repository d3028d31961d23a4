import { FileHelper, z } from '@start9labs/start-sdk'
import { SETTINGS } from '../src-main/config/settingSpecs'
import { sdk } from './sdk'

const { InputSpec, Value } = sdk

/** Patterns the form enforces; the daemon validates every value again when it loads it. */
export const FIELD_PATTERNS = {
  host: { regex: '^[A-Za-z0-9._:-]+$', description: 'A host name or IP address, without scheme or port' },
  user: { regex: '^[a-z_][a-z0-9_.-]{0,31}$', description: 'A POSIX user name' },
  container: { regex: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$', description: 'A container name' },
  url: { regex: '^https?://\\S+$', description: 'An http:// or https:// URL' },
} as const

const text = <Required extends boolean>(
  name: keyof typeof SETTINGS,
  label: string,
  opts: { required: Required; pattern?: keyof typeof FIELD_PATTERNS; placeholder?: string; masked?: boolean },
) =>
  Value.text({
    name: label,
    description: SETTINGS[name].description,
    required: opts.required,
    default: null,
    masked: opts.masked ?? false,
    placeholder: opts.placeholder ?? null,
    patterns: opts.pattern ? [FIELD_PATTERNS[opts.pattern]] : [],
  })

/**
 * The configuration action's form: every setting of spec 000 §2.1, keyed by its environment name
 * so the form, the stored file and the daemon's environment use one vocabulary.
 */
export const configSpec = InputSpec.of({
  NODE1_HOST: text('NODE1_HOST', 'node1 host', { required: true, pattern: 'host', placeholder: '192.168.1.11' }),
  NODE1_USER: text('NODE1_USER', 'node1 user', { required: true, pattern: 'user' }),
  NODE2_HOST: text('NODE2_HOST', 'node2 host', { required: true, pattern: 'host', placeholder: '192.168.1.12' }),
  NODE2_USER: text('NODE2_USER', 'node2 user', { required: true, pattern: 'user' }),
  ASR_HOST: text('ASR_HOST', 'asr host', { required: false, pattern: 'host', placeholder: 'node2 host' }),
  ASR_USER: text('ASR_USER', 'asr user', { required: false, pattern: 'user', placeholder: 'node2 user' }),
  ASR_CONTAINER: text('ASR_CONTAINER', 'asr container', {
    required: false,
    pattern: 'container',
    placeholder: SETTINGS.ASR_CONTAINER.default,
  }),
  TTS_HOST: text('TTS_HOST', 'tts host', { required: false, pattern: 'host', placeholder: 'node2 host' }),
  TTS_USER: text('TTS_USER', 'tts user', { required: false, pattern: 'user', placeholder: 'node2 user' }),
  TTS_CONTAINER: text('TTS_CONTAINER', 'tts container', {
    required: false,
    pattern: 'container',
    placeholder: SETTINGS.TTS_CONTAINER.default,
  }),
  LLM_PORT: Value.number({
    name: 'llm port',
    description: SETTINGS.LLM_PORT.description,
    required: false,
    default: null,
    integer: true,
    min: 1,
    max: 65535,
    placeholder: SETTINGS.LLM_PORT.default,
  }),
  CHAT_UI_URL: text('CHAT_UI_URL', 'Chat UI URL', { required: false, pattern: 'url' }),
  REGISTRY_API_KEY: text('REGISTRY_API_KEY', 'Registry API key', { required: false, masked: true }),
})

/** What the form saves (null = left blank). */
export const StoredConfig = z.object({
  NODE1_HOST: z.string(),
  NODE1_USER: z.string(),
  NODE2_HOST: z.string(),
  NODE2_USER: z.string(),
  ASR_HOST: z.string().nullable(),
  ASR_USER: z.string().nullable(),
  ASR_CONTAINER: z.string().nullable(),
  TTS_HOST: z.string().nullable(),
  TTS_USER: z.string().nullable(),
  TTS_CONTAINER: z.string().nullable(),
  LLM_PORT: z.number().int().nullable(),
  CHAT_UI_URL: z.string().nullable(),
  REGISTRY_API_KEY: z.string().nullable(),
})
export type StoredConfig = z.infer<typeof StoredConfig>

/** The settings the form carries, in form order. */
export const CONFIG_KEYS = Object.keys(StoredConfig.shape) as (keyof StoredConfig)[]

/** The saved form, on the data volume beside Tandem's own state (`/data/startos-config.json`). */
export const configFile = FileHelper.json({ base: sdk.volumes.main, subpath: 'startos-config.json' }, StoredConfig)

/** Where the daemon keeps its data inside the container, and the paths spec 000 §2.1 fixes. */
export const FIXED_ENV = {
  DATA_DIR: '/data',
  PORT: '9999',
  BIND: '0.0.0.0',
  CONNECTIVITY_LOG: '/data/connectivity.json',
  MODELS_OVERRIDES: '/data/models-overrides.yaml',
  SERVICES_OVERRIDES: '/data/services-overrides.yaml',
} as const

/**
 * The daemon's environment: every configured field under its own name, an unset optional field as
 * an empty string (the daemon treats it as unset and applies its fallback), null as empty too.
 */
export function daemonEnv(stored: StoredConfig | null): Record<string, string> {
  const env: Record<string, string> = { ...FIXED_ENV }
  for (const key of CONFIG_KEYS) {
    const value = stored?.[key] ?? null
    env[key] = value === null ? '' : String(value)
  }
  return env
}
