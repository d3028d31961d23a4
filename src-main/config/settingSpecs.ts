/**
 * Every setting Tandem reads, by its environment name. The same names are the keys of
 * `DATA_DIR/settings.json`. Order: built-in default < settings file < environment.
 */
/** Where the Settings page shows a setting. */
export type SettingGroup = 'nodes' | 'services' | 'gateway' | 'licensing' | 'security' | 'advanced'

/** Groups of the first layout, still accepted so older entries keep working: both read as Advanced. */
type LegacyGroup = 'server' | 'paths'

export interface SettingSpec {
  readonly description: string
  readonly kind: 'string' | 'port' | 'int' | 'url' | 'list' | 'path'
  readonly default: string
  /** Masked everywhere outside the process; redacted from logs. */
  readonly secret?: boolean
  readonly group: SettingGroup | LegacyGroup
  /** Human label on the Settings page; missing = derived from the name. */
  readonly label?: string
  /** One line of help under the label; missing = `description`. */
  readonly help?: string
  /** Inclusive bounds of an `int`, for the page's input and its error in words. */
  readonly range?: readonly [number, number]
  /** Read by nothing yet: kept in the file and the environment, not offered on the page. */
  readonly unread?: boolean
}

/** Node names go up to node64: node1 and node2 have their own settings, NODES holds the rest. */
export const MAX_EXTRA_NODES = 62

export const SETTINGS = {
  PORT: {
    group: 'advanced',
    kind: 'port',
    default: '9999',
    label: 'HTTP port',
    description: 'HTTP port for the dashboard, API and gateway',
  },
  BIND: {
    group: 'advanced',
    kind: 'string',
    default: '0.0.0.0',
    label: 'Listen address',
    description: 'Address to listen on (0.0.0.0 = every interface)',
  },
  PUBLIC_URL: {
    group: 'licensing',
    kind: 'url',
    default: '',
    label: 'Public address',
    description: 'Public base URL (checkout redirects, poll URLs); blank = http://<host>:PORT',
  },
  ADMIN_TOKEN: {
    group: 'security',
    kind: 'string',
    default: '',
    secret: true,
    label: 'Admin token',
    description: 'Admin token; blank = generated once into DATA_DIR/admin-token',
  },
  CONSUMER_API_KEYS: {
    group: 'security',
    kind: 'list',
    default: '',
    secret: true,
    label: 'Consumer API keys',
    description: 'Comma list of bearer keys for LAN clients; blank = consumer surface open on the LAN',
  },
  TRUSTED_PROXIES: {
    group: 'security',
    kind: 'list',
    default: '',
    label: 'Trusted reverse proxies',
    description:
      'Comma list of reverse-proxy addresses or CIDRs whose X-Forwarded-For / X-Forwarded-Proto are believed; blank = none',
  },
  PLAYGROUND_SESSION_UPLOADS: {
    group: 'security',
    kind: 'string',
    default: 'off',
    label: 'Dashboard session for large playground uploads',
    description:
      "on: the dashboard's session may send the browser playground's recordings over 8 MiB to /api/audio/transcribe-with-speakers, from the dashboard's own page only; off: the gateway takes only consumer keys and the admin token as a Bearer",
  },
  CHAT_UI_URL: {
    group: 'gateway',
    kind: 'url',
    default: '',
    label: 'Chat app address',
    description: "When set, the top bar shows 'Open chat'",
  },
  NODE1_HOST: { group: 'nodes', kind: 'string', default: '', label: 'node1 host', description: 'node1 (llm) host' },
  NODE1_USER: { group: 'nodes', kind: 'string', default: '', label: 'node1 SSH user', description: 'node1 SSH user' },
  NODE1_SSH_PORT: {
    group: 'nodes',
    kind: 'port',
    default: '22',
    label: 'node1 SSH port',
    description: 'node1 SSH port',
  },
  NODE2_HOST: { group: 'nodes', kind: 'string', default: '', label: 'node2 host', description: 'node2 (speech) host' },
  NODE2_USER: { group: 'nodes', kind: 'string', default: '', label: 'node2 SSH user', description: 'node2 SSH user' },
  NODE2_SSH_PORT: {
    group: 'nodes',
    kind: 'port',
    default: '22',
    label: 'node2 SSH port',
    description: 'node2 SSH port',
  },
  NODES: {
    group: 'nodes',
    kind: 'list',
    default: '',
    label: 'More nodes',
    help: 'Nodes past node2, comma separated, each user@host or user@host:port; named node3, node4, … in this order',
    description:
      'Nodes past node2, comma separated, each user@host or user@host:port (an IPv6 address in brackets); named node3, node4, … in this order, at most 62; a malformed entry is reported and skipped',
  },
  METRICS_TOKEN: {
    group: 'security',
    kind: 'string',
    default: '',
    secret: true,
    label: 'Metrics token',
    description: 'Bearer token Prometheus sends to read /metrics; blank = only the admin credential reads it',
  },
  WOL_BROADCAST: {
    group: 'nodes',
    kind: 'string',
    default: '255.255.255.255',
    label: 'Wake-on-LAN broadcast',
    description: 'Broadcast address for the direct Wake-on-LAN fallback',
  },
  MONITOR_INTERVAL_S: {
    group: 'nodes',
    kind: 'int',
    default: '60',
    range: [0, 3600],
    label: 'Probe interval (seconds)',
    description: 'Seconds between background probes of nodes and services (connectivity history); 0 = only when polled',
  },
  LLM_PORT: {
    group: 'services',
    kind: 'port',
    default: '8888',
    label: 'llm port',
    description: 'llm (vLLM) port on node1',
  },
  LLM_CONTAINER: {
    group: 'services',
    kind: 'string',
    default: 'vllm_node',
    label: 'llm container',
    description: 'llm container name',
  },
  LAUNCHER_DIR: {
    group: 'services',
    kind: 'string',
    default: '$HOME/spark-vllm-docker',
    label: 'Launcher folder',
    description: 'Launcher checkout on node1',
  },
  ASR_HOST: {
    group: 'services',
    kind: 'string',
    default: '',
    label: 'asr host',
    description: 'asr host; blank = node2',
  },
  ASR_USER: {
    group: 'services',
    kind: 'string',
    default: '',
    label: 'asr SSH user',
    description: 'asr SSH user; blank = node2 user',
  },
  ASR_SSH_PORT: {
    group: 'services',
    kind: 'port',
    default: '',
    label: 'asr SSH port',
    description: "asr SSH port; blank = its node's",
  },
  ASR_CONTAINER: {
    group: 'services',
    kind: 'string',
    default: 'asr',
    label: 'asr container',
    description: 'asr container name',
  },
  ASR_PORT: { group: 'services', kind: 'port', default: '9000', label: 'asr port', description: 'asr HTTP port' },
  TTS_HOST: {
    group: 'services',
    kind: 'string',
    default: '',
    label: 'tts host',
    description: 'tts host; blank = node2',
  },
  TTS_USER: {
    group: 'services',
    kind: 'string',
    default: '',
    label: 'tts SSH user',
    description: 'tts SSH user; blank = node2 user',
  },
  TTS_SSH_PORT: {
    group: 'services',
    kind: 'port',
    default: '',
    label: 'tts SSH port',
    description: "tts SSH port; blank = its node's",
  },
  TTS_CONTAINER: {
    group: 'services',
    kind: 'string',
    default: 'tts',
    label: 'tts container',
    description: 'tts container name',
  },
  TTS_PORT: { group: 'services', kind: 'port', default: '9001', label: 'tts port', description: 'tts HTTP port' },
  REGISTRY_API_KEY: {
    group: 'security',
    kind: 'string',
    default: '',
    secret: true,
    label: 'Container registry key',
    description: 'Container registry key for prebuilt images',
  },
  LOCAL_MODEL_ROOTS: {
    group: 'services',
    kind: 'list',
    default: '/home,/data,/mnt,/srv,/opt/models',
    label: 'Local model folders',
    description: 'Directories a local model may live under (comma list of absolute paths)',
  },
  SWAP_LOAD_TIMEOUT_S: {
    group: 'services',
    kind: 'int',
    default: '1800',
    range: [30, 86400],
    label: 'Model load timeout (seconds)',
    description: 'Seconds a swapped-in model may take to answer before the swap fails',
  },
  SWAP_HOLD_S: {
    group: 'services',
    kind: 'int',
    default: '600',
    range: [0, 86400],
    label: 'Hold requests during a swap (seconds)',
    description: 'Seconds chat and completions requests wait for a swap in progress before a 503',
  },
  SWAP_ROLLBACK: {
    group: 'services',
    kind: 'string',
    default: 'on',
    label: 'Roll back a failed swap',
    description: 'on: relaunch the previous model when a swap fails; off: leave the llm stopped',
  },
  SWAP_ON_DEMAND: {
    group: 'services',
    kind: 'string',
    default: 'off',
    label: 'Swap on demand',
    description: 'on: a request naming a catalog model that is not loaded starts a swap and waits for it',
  },
  ENGINE_METRICS_INTERVAL_S: {
    group: 'services',
    kind: 'int',
    default: '15',
    range: [0, 3600],
    label: 'Engine metrics interval (seconds)',
    description: 'Seconds between reads of each placement engine’s own /metrics; 0 = off',
  },
  ENGINE_METRICS_FAMILIES: {
    group: 'services',
    kind: 'string',
    default: 'kept',
    label: 'Engine metric families',
    description:
      'kept: the listed vLLM families in /metrics (docs/observability.md); all: every family the engines send',
  },
  PLACEMENT_RECOVERY: {
    group: 'services',
    kind: 'string',
    default: 'on',
    label: 'Recover placements',
    description:
      'on: relaunch a placed model that stopped (a reboot, a crash) when its nodes answer again; off: leave it lost',
  },
  PLACEMENT_IDLE_TTL_MIN: {
    group: 'services',
    kind: 'int',
    default: '30',
    range: [1, 10080],
    label: 'Unload an on-demand model after (minutes idle)',
    description:
      'Minutes without a request after which a model swapped in on demand is stopped (operator placements stay)',
  },
  DEEP_HEALTH_INTERVAL_S: {
    group: 'services',
    kind: 'int',
    default: '300',
    range: [10, 86400],
    label: 'Deep-health interval (seconds)',
    description: 'Seconds between deep-health probes',
  },
  EMBEDDINGS_URL: {
    group: 'gateway',
    kind: 'url',
    default: '',
    label: 'Embeddings server',
    description: 'OpenAI-compatible embeddings server',
  },
  VECTOR_URL: {
    group: 'gateway',
    kind: 'url',
    default: '',
    label: 'Vector store',
    description: 'Qdrant-compatible vector store',
  },
  SCRUB_TERMS: {
    group: 'gateway',
    kind: 'list',
    default: '',
    label: 'Extra redaction terms',
    description: 'Comma list of extra terms the redaction gateway replaces',
  },
  TTS_VOICE_ALIASES: {
    group: 'gateway',
    kind: 'list',
    default: '',
    label: 'Voice aliases',
    help: 'OpenAI voice names for tts voices, e.g. alloy=Multivoice.EN-US.Aria; unlisted names are picked from the voice list',
    description:
      'OpenAI voice names for tts voices, e.g. alloy=Multivoice.EN-US.Aria,echo=Multivoice.EN-GB.Harry; names not listed are picked from the voice list (English first)',
  },
  GATEWAY_UPLOAD_MAX_MB: {
    group: 'gateway',
    kind: 'int',
    default: '4096',
    range: [1, 1048576],
    label: 'Largest upload (MiB)',
    description: 'Largest audio upload the transcription routes take (MiB); larger ones are refused with 413',
  },
  GATEWAY_UPLOAD_IDLE_S: {
    group: 'gateway',
    kind: 'int',
    default: '60',
    range: [5, 3600],
    label: 'Upload idle timeout (seconds)',
    description: 'An upload that sends nothing for this long is answered with 408 and dropped',
  },
  GATEWAY_BODY_IDLE_S: {
    group: 'gateway',
    kind: 'int',
    default: '10',
    range: [1, 3600],
    label: 'Request body idle timeout (seconds)',
    help: 'A chat, completion or embeddings body that sends nothing for this long is answered with 408 and released',
    description:
      'A chat, completion or embeddings body that sends nothing for this long is answered with 408 and its memory released (seconds)',
  },
  GATEWAY_SPOOL_MB: {
    group: 'gateway',
    kind: 'int',
    default: '8192',
    range: [64, 1048576],
    label: 'Upload spool budget (MiB)',
    description:
      'What all uploads in progress may hold together under DATA_DIR/tmp (MiB); beyond it, 503 with Retry-After',
  },
  GATEWAY_BODY_BUDGET_MB: {
    group: 'gateway',
    kind: 'int',
    default: '256',
    range: [16, 65536],
    label: 'Request body memory (MiB)',
    help: 'Memory chat, completion and embeddings bodies in progress may hold together; one address or key half of it',
    description:
      'What the chat, completion and embeddings bodies in progress may hold in memory together (MiB; at most an eighth of the machine’s memory unless set); one address or key may hold half of it; beyond it, 503 with Retry-After',
  },
  GATEWAY_DISK_FLOOR_MB: {
    group: 'gateway',
    kind: 'int',
    default: '1024',
    range: [0, 1048576],
    label: 'Free disk to keep (MiB)',
    description: 'An upload that would leave less free space than this in DATA_DIR is refused with 507 (MiB; 0 = none)',
  },
  GATEWAY_TIMEOUT_MIN: {
    group: 'gateway',
    kind: 'int',
    default: '30',
    range: [1, 1440],
    label: 'Generation timeout (minutes)',
    description:
      'How long a relayed chat, completion, embeddings or transcription answer may take before it is cut with 504 (minutes)',
  },
  RATE_SOURCES: {
    group: 'licensing',
    kind: 'list',
    default: 'https://api.kraken.com,https://api.coinbase.com,https://api.coingecko.com',
    label: 'Exchange-rate sources',
    description: 'Exchange-rate source base URLs, tried in order (Kraken, Coinbase, CoinGecko)',
  },
  LICENSING_RATE_LIMIT: {
    group: 'licensing',
    kind: 'int',
    default: '600',
    range: [0, 1_000_000],
    label: 'Public API requests per minute',
    description: 'Licensing public API requests per minute per client address (burst of the same size); 0 = no limit',
  },
  REDIRECT_ALLOWLIST: {
    group: 'licensing',
    kind: 'list',
    default: '',
    label: 'Extra checkout return origins',
    description:
      "Comma list of origins (https://shop.example) a purchase's redirect_url may point at, besides PUBLIC_URL and the product's return URL prefix",
  },
  DISCOUNT_RESERVATION_MINUTES: {
    group: 'licensing',
    kind: 'int',
    default: '30',
    range: [1, 1440],
    label: 'Discount hold for unpaid checkouts (minutes)',
    description: 'How long an unpaid checkout holds a use of a capped discount code before it is released',
  },
  VALIDATION_LOG_RETENTION_DAYS: {
    group: 'licensing',
    kind: 'int',
    default: '90',
    range: [0, 36_500],
    label: 'Validation log: days kept',
    description: 'Days the validation log keeps each validate/activate/heartbeat/deactivate call; 0 = no age limit',
  },
  VALIDATION_LOG_MAX_ROWS: {
    group: 'licensing',
    kind: 'int',
    default: '1000000',
    range: [0, 1_000_000_000],
    label: 'Validation log: most rows kept',
    description: 'Most calls the validation log keeps (the oldest go first); 0 = no row limit',
  },
  LICENSING_BACKUPS: {
    group: 'licensing',
    kind: 'int',
    default: '7',
    range: [0, 1000],
    label: 'Licensing database backups kept',
    description:
      'Rolling backups of the licensing database in DATA_DIR/backups (one at start, then daily); the newest this many are kept; 0 = no backups',
  },
  CONNECTIVITY_LOG: {
    group: 'advanced',
    kind: 'path',
    default: '',
    label: 'Connectivity history file',
    description: 'Connectivity store; blank = DATA_DIR/connectivity.json',
  },
  MODELS_OVERRIDES: {
    group: 'advanced',
    kind: 'path',
    default: '',
    label: 'Model overrides file',
    description: 'Model overrides; blank = DATA_DIR/models-overrides.yaml',
  },
  SERVICES_OVERRIDES: {
    group: 'advanced',
    kind: 'path',
    default: '',
    label: 'Custom services file',
    description: 'Custom services; blank = DATA_DIR/services-overrides.yaml',
  },
} as const satisfies Record<string, SettingSpec>

export type SettingName = keyof typeof SETTINGS
export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[]

/** Own properties only: `constructor`, `toString` or `__proto__` is not a setting. */
export function isSettingName(name: string): name is SettingName {
  return Object.hasOwn(SETTINGS, name)
}
