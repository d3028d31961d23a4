import { z } from 'zod'
import { isAddressOrCidr } from '../core/netAddress'

/**
 * Every setting Tandem reads, by its environment name. The same names are the keys of
 * `DATA_DIR/settings.json`. Order: built-in default < settings file < environment.
 */
export interface SettingSpec {
  readonly description: string
  readonly kind: 'string' | 'port' | 'int' | 'url' | 'list' | 'path'
  readonly default: string
  /** Masked everywhere outside the process; redacted from logs. */
  readonly secret?: boolean
  /** Needs a restart to take effect (true for almost everything: services are built at start-up). */
  readonly group: 'server' | 'nodes' | 'services' | 'gateway' | 'licensing' | 'paths'
}

export const SETTINGS = {
  PORT: { group: 'server', kind: 'port', default: '9999', description: 'HTTP port for the dashboard, API and gateway' },
  BIND: { group: 'server', kind: 'string', default: '0.0.0.0', description: 'Address to listen on' },
  PUBLIC_URL: {
    group: 'server',
    kind: 'url',
    default: '',
    description: 'Public base URL (checkout redirects, poll URLs); blank = http://<host>:PORT',
  },
  ADMIN_TOKEN: {
    group: 'server',
    kind: 'string',
    default: '',
    secret: true,
    description: 'Admin token; blank = generated once into DATA_DIR/admin-token',
  },
  CONSUMER_API_KEYS: {
    group: 'server',
    kind: 'list',
    default: '',
    secret: true,
    description: 'Comma list of bearer keys for LAN clients; blank = consumer surface open on the LAN',
  },
  TRUSTED_PROXIES: {
    group: 'server',
    kind: 'list',
    default: '',
    description:
      'Comma list of reverse-proxy addresses or CIDRs whose X-Forwarded-For / X-Forwarded-Proto are believed; blank = none',
  },
  CHAT_UI_URL: { group: 'server', kind: 'url', default: '', description: "When set, the top bar shows 'Open chat'" },
  METRICS_TOKEN: {
    group: 'server',
    kind: 'string',
    default: '',
    secret: true,
    description: 'Bearer token Prometheus sends to read /metrics; blank = only the admin credential reads it',
  },
  NODE1_HOST: { group: 'nodes', kind: 'string', default: '', description: 'node1 (llm) host' },
  NODE1_USER: { group: 'nodes', kind: 'string', default: '', description: 'node1 SSH user' },
  NODE1_SSH_PORT: { group: 'nodes', kind: 'port', default: '22', description: 'node1 SSH port' },
  NODE2_HOST: { group: 'nodes', kind: 'string', default: '', description: 'node2 (speech) host' },
  NODE2_USER: { group: 'nodes', kind: 'string', default: '', description: 'node2 SSH user' },
  NODE2_SSH_PORT: { group: 'nodes', kind: 'port', default: '22', description: 'node2 SSH port' },
  WOL_BROADCAST: {
    group: 'nodes',
    kind: 'string',
    default: '255.255.255.255',
    description: 'Broadcast address for the direct Wake-on-LAN fallback',
  },
  MONITOR_INTERVAL_S: {
    group: 'nodes',
    kind: 'int',
    default: '60',
    description: 'Seconds between background probes of nodes and services (connectivity history); 0 = only when polled',
  },
  LLM_PORT: { group: 'services', kind: 'port', default: '8888', description: 'llm (vLLM) port on node1' },
  LLM_CONTAINER: { group: 'services', kind: 'string', default: 'vllm_node', description: 'llm container name' },
  LAUNCHER_DIR: {
    group: 'services',
    kind: 'string',
    default: '$HOME/spark-vllm-docker',
    description: 'Launcher checkout on node1',
  },
  ASR_HOST: { group: 'services', kind: 'string', default: '', description: 'asr host; blank = node2' },
  ASR_USER: { group: 'services', kind: 'string', default: '', description: 'asr SSH user; blank = node2 user' },
  ASR_SSH_PORT: { group: 'services', kind: 'port', default: '', description: "asr SSH port; blank = its node's" },
  ASR_CONTAINER: { group: 'services', kind: 'string', default: 'asr', description: 'asr container name' },
  ASR_PORT: { group: 'services', kind: 'port', default: '9000', description: 'asr HTTP port' },
  TTS_HOST: { group: 'services', kind: 'string', default: '', description: 'tts host; blank = node2' },
  TTS_USER: { group: 'services', kind: 'string', default: '', description: 'tts SSH user; blank = node2 user' },
  TTS_SSH_PORT: { group: 'services', kind: 'port', default: '', description: "tts SSH port; blank = its node's" },
  TTS_CONTAINER: { group: 'services', kind: 'string', default: 'tts', description: 'tts container name' },
  TTS_PORT: { group: 'services', kind: 'port', default: '9001', description: 'tts HTTP port' },
  REGISTRY_API_KEY: {
    group: 'services',
    kind: 'string',
    default: '',
    secret: true,
    description: 'Container registry key for prebuilt images',
  },
  LOCAL_MODEL_ROOTS: {
    group: 'services',
    kind: 'list',
    default: '/home,/data,/mnt,/srv,/opt/models',
    description: 'Directories a local model may live under (comma list of absolute paths)',
  },
  SWAP_LOAD_TIMEOUT_S: {
    group: 'services',
    kind: 'int',
    default: '1800',
    description: 'Seconds a swapped-in model may take to answer before the swap fails',
  },
  SWAP_HOLD_S: {
    group: 'services',
    kind: 'int',
    default: '600',
    description: 'Seconds chat and completions requests wait for a swap in progress before a 503',
  },
  SWAP_ROLLBACK: {
    group: 'services',
    kind: 'string',
    default: 'on',
    description: 'on: relaunch the previous model when a swap fails; off: leave the llm stopped',
  },
  SWAP_ON_DEMAND: {
    group: 'services',
    kind: 'string',
    default: 'off',
    description: 'on: a request naming a catalog model that is not loaded starts a swap and waits for it',
  },
  DEEP_HEALTH_INTERVAL_S: {
    group: 'services',
    kind: 'int',
    default: '300',
    description: 'Seconds between deep-health probes',
  },
  EMBEDDINGS_URL: { group: 'gateway', kind: 'url', default: '', description: 'OpenAI-compatible embeddings server' },
  VECTOR_URL: { group: 'gateway', kind: 'url', default: '', description: 'Qdrant-compatible vector store' },
  SCRUB_TERMS: {
    group: 'gateway',
    kind: 'list',
    default: '',
    description: 'Comma list of extra terms the redaction gateway replaces',
  },
  TTS_VOICE_ALIASES: {
    group: 'gateway',
    kind: 'list',
    default: '',
    description:
      'OpenAI voice names for tts voices, e.g. alloy=Multivoice.EN-US.Aria,echo=Multivoice.EN-GB.Harry; names not listed are picked from the voice list (English first)',
  },
  RATE_SOURCES: {
    group: 'licensing',
    kind: 'list',
    default: 'https://api.kraken.com,https://api.coinbase.com,https://api.coingecko.com',
    description: 'Exchange-rate source base URLs, tried in order (Kraken, Coinbase, CoinGecko)',
  },
  LICENSING_RATE_LIMIT: {
    group: 'licensing',
    kind: 'int',
    default: '600',
    description: 'Licensing public API requests per minute per client address (burst of the same size); 0 = no limit',
  },
  CONNECTIVITY_LOG: {
    group: 'paths',
    kind: 'path',
    default: '',
    description: 'Connectivity store; blank = DATA_DIR/connectivity.json',
  },
  MODELS_OVERRIDES: {
    group: 'paths',
    kind: 'path',
    default: '',
    description: 'Model overrides; blank = DATA_DIR/models-overrides.yaml',
  },
  SERVICES_OVERRIDES: {
    group: 'paths',
    kind: 'path',
    default: '',
    description: 'Custom services; blank = DATA_DIR/services-overrides.yaml',
  },
} as const satisfies Record<string, SettingSpec>

export type SettingName = keyof typeof SETTINGS
export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[]

/** Own properties only: `constructor`, `toString` or `__proto__` is not a setting. */
export function isSettingName(name: string): name is SettingName {
  return Object.hasOwn(SETTINGS, name)
}

export const SettingSource = z.enum(['default', 'file', 'environment'])
export type SettingSource = z.infer<typeof SettingSource>

/** One setting as the Settings view sees it: secrets masked, with where the value came from. */
export const SettingView = z.object({
  name: z.string(),
  value: z.string(),
  source: SettingSource,
  editable: z.boolean(),
  secret: z.boolean(),
  group: z.string(),
  description: z.string(),
  kind: z.string(),
  /** A value saved to the settings file that takes effect at the next start (masked when secret). */
  pending: z.string().nullable(),
})
export type SettingView = z.infer<typeof SettingView>

/**
 * Settings to save, by name. Every key must be a setting (own property): the check runs on the
 * raw object because a zod record silently drops a `__proto__` key instead of refusing it.
 */
export const SettingChanges = z.preprocess(
  (raw: Record<string, string>, ctx) => {
    if (typeof raw === 'object' && raw !== null && !Array.isArray(raw))
      for (const key of Object.keys(raw))
        if (!isSettingName(key)) ctx.addIssue({ code: 'custom', message: 'unknown setting', path: [key], input: raw })
    return raw
  },
  z.record(z.string(), z.string().max(4096)),
)

const port = z.coerce.number().int().min(1).max(65535)
const hostLike = z.string().regex(/^[A-Za-z0-9._:-]*$/, 'host may hold letters, digits, dots, dashes and colons only')
const userLike = z.string().regex(/^[a-z_][a-z0-9_.-]{0,31}$|^$/, 'a POSIX user name')
const containerLike = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'a container name')

/** Per-setting validators: a value that fails falls back to the default with one warning. */
export const settingValidators: Record<SettingName, z.ZodType> = {
  PORT: port,
  BIND: hostLike,
  PUBLIC_URL: z.url({ protocol: /^https?$/ }),
  ADMIN_TOKEN: z.string().min(16, 'at least 16 characters'),
  CONSUMER_API_KEYS: z.string(),
  TRUSTED_PROXIES: z.string().refine((v) => v.split(',').every((x) => x.trim() === '' || isAddressOrCidr(x.trim())), {
    message: 'addresses or CIDRs, comma separated (e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8)',
  }),
  CHAT_UI_URL: z.url({ protocol: /^https?$/ }),
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{16,}$/, 'at least 16 printable characters without spaces'),
  NODE1_HOST: hostLike,
  NODE1_USER: userLike,
  NODE1_SSH_PORT: port,
  NODE2_HOST: hostLike,
  NODE2_USER: userLike,
  NODE2_SSH_PORT: port,
  WOL_BROADCAST: z.ipv4(),
  MONITOR_INTERVAL_S: z.coerce
    .number()
    .int()
    .refine((n) => n === 0 || (n >= 1 && n <= 3600), '0, or 1 to 3600'),
  LLM_PORT: port,
  LLM_CONTAINER: containerLike,
  LAUNCHER_DIR: z.string().regex(/^(\$HOME\/)?[A-Za-z0-9._/-]+$/, 'an absolute path or $HOME/<path>'),
  ASR_HOST: hostLike,
  ASR_USER: userLike,
  ASR_SSH_PORT: port,
  ASR_CONTAINER: containerLike,
  ASR_PORT: port,
  TTS_HOST: hostLike,
  TTS_USER: userLike,
  TTS_SSH_PORT: port,
  TTS_CONTAINER: containerLike,
  TTS_PORT: port,
  REGISTRY_API_KEY: z.string().regex(/^[\x21-\x7e]*$/, 'printable characters without spaces'),
  LOCAL_MODEL_ROOTS: z
    .string()
    .refine((v) => v.split(',').every((p) => /^\/[A-Za-z0-9._/-]*$/.test(p.trim()) && !p.split('/').includes('..')), {
      message: 'absolute paths of letters, digits, dot, dash, underscore and slash, comma separated',
    }),
  SWAP_LOAD_TIMEOUT_S: z.coerce.number().int().min(30).max(86400),
  SWAP_HOLD_S: z.coerce.number().int().min(0).max(86400),
  SWAP_ROLLBACK: z.enum(['on', 'off']),
  SWAP_ON_DEMAND: z.enum(['on', 'off']),
  DEEP_HEALTH_INTERVAL_S: z.coerce.number().int().min(10).max(86400),
  EMBEDDINGS_URL: z.url({ protocol: /^https?$/ }),
  VECTOR_URL: z.url({ protocol: /^https?$/ }),
  SCRUB_TERMS: z.string(),
  // Checked entry by entry by the gateway (gateway/speech.ts): a malformed entry is reported and skipped, not the whole list.
  TTS_VOICE_ALIASES: z.string(),
  RATE_SOURCES: z
    .string()
    .refine(
      (s) => s.split(',').every((u) => z.url({ protocol: /^https?$/ }).safeParse(u.trim()).success),
      'comma list of http(s) URLs',
    ),
  LICENSING_RATE_LIMIT: z.coerce.number().int().min(0).max(1_000_000),
  CONNECTIVITY_LOG: z.string().regex(/^\/[^\0]*$/, 'an absolute path'),
  MODELS_OVERRIDES: z.string().regex(/^\/[^\0]*$/, 'an absolute path'),
  SERVICES_OVERRIDES: z.string().regex(/^\/[^\0]*$/, 'an absolute path'),
}
