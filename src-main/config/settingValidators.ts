import { z } from 'zod'
import { isAddressOrCidr, trustTooBroad } from '../lib/netAddress'
import { MAX_EXTRA_NODES, type SettingName } from './settingSpecs'

/**
 * Every numeric setting (spec 1, 2.1 rule 3): decimal digits, then the range. `Number()` alone
 * would also read 0x2328, 1e3, 0b10, 9000.0 and +9000. Values arrive trimmed.
 */
const wholeNumber = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be decimal digits').transform(Number).pipe(z.number().int().min(min).max(max))
export const port = wholeNumber(1, 65535)
export const hostLike = z
  .string()
  .regex(/^[A-Za-z0-9._:-]*$/, 'must be a host name or address (letters, digits, dots, dashes and colons)')
export const userLike = z
  .string()
  .regex(/^[a-z_][a-z0-9_.-]{0,31}$|^$/, 'must be a user name (lower-case letters, digits, _ . -; up to 32)')
const containerLike = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'must be a container name (letters, digits, _ . -)')
/** An http(s) origin: scheme, host and optional port, nothing after it. */
const isOrigin = (u: string): boolean => {
  try {
    const url = new URL(u)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === u.replace(/\/+$/, '')
  } catch {
    return false
  }
}

/** Per-setting validators: a value that fails falls back to the default with one warning. */
export const settingValidators: Record<SettingName, z.ZodType> = {
  PORT: port,
  BIND: hostLike,
  PUBLIC_URL: z.url({ protocol: /^https?$/ }),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters'),
  CONSUMER_API_KEYS: z.string(),
  TRUSTED_PROXIES: z
    .string()
    .refine((v) => v.split(',').every((x) => x.trim() === '' || isAddressOrCidr(x.trim())), {
      message: 'must be addresses or CIDRs, comma separated (e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8)',
    })
    .superRefine((v, ctx) => {
      const broad = v
        .split(',')
        .map(trustTooBroad)
        .find((p) => p !== null)
      if (broad)
        ctx.addIssue({
          code: 'custom',
          message: `${broad}: any client could then forge its address; list the proxy's own address or its subnet`,
        })
    }),
  PLAYGROUND_SESSION_UPLOADS: z.enum(['on', 'off'], 'must be on or off'),
  CHAT_UI_URL: z.url({ protocol: /^https?$/ }),
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{16,}$/, 'must be at least 16 printable characters without spaces'),
  NODE1_HOST: hostLike,
  NODE1_USER: userLike,
  NODE1_SSH_PORT: port,
  NODE2_HOST: hostLike,
  NODE2_USER: userLike,
  NODE2_SSH_PORT: port,
  // Checked entry by entry when loaded (config/nodes.ts): a malformed entry is reported and skipped, not the whole list.
  NODES: z
    .string()
    .refine(
      (v) => v.split(',').length <= MAX_EXTRA_NODES,
      'must list at most 62 nodes (node3 … node64), comma separated',
    ),
  WOL_BROADCAST: z.ipv4('must be an IPv4 address such as 192.168.1.255'),
  MONITOR_INTERVAL_S: wholeNumber(0, 3600),
  LLM_PORT: port,
  LLM_CONTAINER: containerLike,
  LAUNCHER_DIR: z.string().regex(/^(\$HOME\/)?[A-Za-z0-9._/-]+$/, 'must be an absolute path or $HOME/<path>'),
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
  REGISTRY_API_KEY: z.string().regex(/^[\x21-\x7e]*$/, 'must be printable characters without spaces'),
  LOCAL_MODEL_ROOTS: z
    .string()
    .refine((v) => v.split(',').every((p) => /^\/[A-Za-z0-9._/-]*$/.test(p.trim()) && !p.split('/').includes('..')), {
      message: 'must be absolute paths of letters, digits, dot, dash, underscore and slash, comma separated',
    }),
  SWAP_LOAD_TIMEOUT_S: wholeNumber(30, 86400),
  SWAP_HOLD_S: wholeNumber(0, 86400),
  SWAP_ROLLBACK: z.enum(['on', 'off'], 'must be on or off'),
  SWAP_ON_DEMAND: z.enum(['on', 'off'], 'must be on or off'),
  ENGINE_METRICS_INTERVAL_S: wholeNumber(0, 3600),
  ENGINE_METRICS_FAMILIES: z.enum(['kept', 'all'], 'must be kept or all'),
  PLACEMENT_RECOVERY: z.enum(['on', 'off'], 'must be on or off'),
  PLACEMENT_IDLE_TTL_MIN: wholeNumber(1, 10080),
  DEEP_HEALTH_INTERVAL_S: wholeNumber(10, 86400),
  EMBEDDINGS_URL: z.url({ protocol: /^https?$/ }),
  VECTOR_URL: z.url({ protocol: /^https?$/ }),
  SCRUB_TERMS: z.string(),
  // Checked entry by entry by the gateway (gateway/audio/speech.ts): a malformed entry is reported and skipped, not the whole list.
  TTS_VOICE_ALIASES: z.string(),
  GATEWAY_UPLOAD_MAX_MB: wholeNumber(1, 1048576),
  GATEWAY_UPLOAD_IDLE_S: wholeNumber(5, 3600),
  GATEWAY_BODY_IDLE_S: wholeNumber(1, 3600),
  GATEWAY_SPOOL_MB: wholeNumber(64, 1048576),
  GATEWAY_DISK_FLOOR_MB: wholeNumber(0, 1048576),
  GATEWAY_BODY_BUDGET_MB: wholeNumber(16, 65536),
  GATEWAY_TIMEOUT_MIN: wholeNumber(1, 1440),
  RATE_SOURCES: z
    .string()
    .refine(
      (s) => s.split(',').every((u) => z.url({ protocol: /^https?$/ }).safeParse(u.trim()).success),
      'must be a comma list of http:// or https:// addresses',
    ),
  LICENSING_RATE_LIMIT: wholeNumber(0, 1_000_000),
  REDIRECT_ALLOWLIST: z
    .string()
    .refine(
      (s) => s.split(',').every((u) => u.trim() === '' || isOrigin(u.trim())),
      'must be a comma list of http(s) origins (scheme://host[:port], no path)',
    ),
  DISCOUNT_RESERVATION_MINUTES: wholeNumber(1, 1440),
  VALIDATION_LOG_RETENTION_DAYS: wholeNumber(0, 36_500),
  VALIDATION_LOG_MAX_ROWS: wholeNumber(0, 1_000_000_000),
  LICENSING_BACKUPS: wholeNumber(0, 1000),
  CONNECTIVITY_LOG: z.string().regex(/^\/[^\0]*$/, 'must be an absolute path'),
  MODELS_OVERRIDES: z.string().regex(/^\/[^\0]*$/, 'must be an absolute path'),
  SERVICES_OVERRIDES: z.string().regex(/^\/[^\0]*$/, 'must be an absolute path'),
}
