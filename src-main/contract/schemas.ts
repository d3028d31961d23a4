import { z } from 'zod'

/**
 * Edge validators for every value that can reach a remote command (spec 1, 5.4): model repo,
 * engine args and knobs, prebuilt image, container, volume, port and environment, service names,
 * the registry key, plus MACs and node names. Values that pass are still quoted with `shq` at the
 * point of use; these schemas keep nonsense out early and give the caller a clear 400.
 */

const PRINTABLE = /^[\x20-\x7e]*$/

/**
 * A text schema's rules as data (pattern, message), so a form can check as the operator types
 * without shipping zod: the renderer gets them through the build's contract-data module.
 */
export interface TextRule {
  readonly pattern: RegExp
  readonly message: string
}

const textMatching = (max: number, rules: readonly TextRule[]) =>
  rules.reduce((s, r) => s.regex(r.pattern, r.message), z.string().max(max))

export const MODEL_REPO_RULES: readonly TextRule[] = [
  {
    pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/,
    message: 'a model repo like org/name',
  },
  { pattern: /^(?!.*(?:\.\.|--))/, message: 'a model repo may not contain ".." or "--"' },
]

/** Model-hub repository id: `org/name`, each part from the hub's own character set. */
export const ModelRepo = textMatching(200, MODEL_REPO_RULES)
export type ModelRepo = z.infer<typeof ModelRepo>

/** Catalog key: used in file names and URLs. */
export const ModelKey = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'letters, digits, dot, dash, underscore')

/** One engine argument (`--max-model-len=32768`, `32768`, `{"image":2}`): printable, no leading dash run-ons. */
export const EngineArg = z
  .string()
  .min(1)
  .max(2048)
  .regex(PRINTABLE, 'printable ASCII only')
  .refine((s) => s.trim() === s, 'no leading or trailing spaces')
export const EngineArgs = z.array(EngineArg).max(128)

/** The per-model knobs (spec 1, 2.3). */
export const Knobs = z
  .object({
    'max-model-len': z.number().int().min(128).max(10_000_000).optional(),
    'gpu-memory-utilization': z.number().min(0.05).max(0.99).optional(),
    fastsafetensors: z.boolean().optional(),
    'prefix-caching': z.boolean().optional(),
    'fp8-kv-cache': z.boolean().optional(),
  })
  .strict()
export type Knobs = z.infer<typeof Knobs>

/** Absolute directory on a node for a local model: whitelisted characters, no `.` or `..` segments. */
export const LocalPath = z
  .string()
  .max(1024)
  .regex(/^\/[A-Za-z0-9._/-]*$/, 'an absolute path of letters, digits, dot, dash, underscore and slash')
  .refine((p) => p.split('/').every((s) => s !== '.' && s !== '..'), 'no "." or ".." segments')

/** Docker image reference: `[registry[:port]/]path[:tag][@sha256:digest]`. */
export const ImageRef = z
  .string()
  .max(512)
  .regex(
    /^(?:[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]{1,5})?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/,
    'a container image reference like registry/repo:tag',
  )

/** Docker container name (docker's own rule). */
export const ContainerName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'a container name')

/** A named volume, or an absolute host directory to bind. */
export const VolumeSource = z.union([
  z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'a volume name'),
  LocalPath,
])

export const Port = z.coerce.number().int().min(1).max(65535)

export const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name')
/** Any text but NUL: it is quoted at use. */
export const EnvValue = z
  .string()
  .max(8192)
  .refine((s) => !s.includes('\0'), 'no NUL bytes')
/**
 * Entries and total size an environment may carry: it travels inside one `docker run` over one SSH
 * exec request, which fails late and obscurely past a few tens of KiB.
 */
export const ENV_MAX_ENTRIES = 64
export const ENV_MAX_BYTES = 16 * 1024
export const EnvMap = z
  .record(EnvName, EnvValue)
  .refine((env) => Object.keys(env).length <= ENV_MAX_ENTRIES, `at most ${ENV_MAX_ENTRIES} variables`)
  .refine(
    (env) =>
      Object.entries(env).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 2, 0) <=
      ENV_MAX_BYTES,
    `at most ${ENV_MAX_BYTES / 1024} KiB of variables in all`,
  )

/** Name of an always-on or custom service (asr, tts, whisper-large, ...). */
export const ServiceName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, dash, underscore')

/** Registry API key: printable, no spaces (quoted at use, redacted from logs). */
export const RegistryKey = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^[\x21-\x7e]+$/, 'printable characters without spaces')

/** Vector-store collection name: nothing from shell or URL syntax. */
export const CollectionName = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'letters, digits, dash, underscore')

/**
 * A node's name: node1 and node2 keep their spec roles (llm head, speech); node3 onward come from
 * the NODES setting, in its order. At most 64 nodes (a Spark cluster's switch has far fewer ports).
 */
export const NodeName = z.string().regex(/^node([1-9]|[1-5][0-9]|6[0-4])$/, 'a node name: node1 … node64')
export type NodeName = z.infer<typeof NodeName>

/** SSH host: a name or an IPv4/IPv6 literal. */
export const SshHost = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9._:-]+$/, 'a host name or address')
export const SshUser = z.string().regex(/^[a-z_][a-z0-9_.-]{0,31}$/, 'a POSIX user name')

/**
 * A MAC address in any common spelling (`aa:bb:..`, `AA-BB-..`, `aabb.ccdd.eeff`, 12 hex digits),
 * normalised to lower-case colon form.
 */
export const MacAddress = z
  .string()
  .trim()
  .transform((s, ctx) => {
    const mac = normalizeMac(s)
    if (mac === null) {
      ctx.addIssue({ code: 'custom', message: 'a MAC address like aa:bb:cc:dd:ee:ff' })
      return z.NEVER
    }
    return mac
  })

export function normalizeMac(raw: string): string | null {
  const s = raw.trim()
  let hex: string | null = null
  if (/^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$/.test(s)) hex = s.replace(/[:-]/g, '')
  else if (/^[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}$/.test(s)) hex = s.replace(/\./g, '')
  else if (/^[0-9A-Fa-f]{12}$/.test(s)) hex = s
  if (hex === null) return null
  hex = hex.toLowerCase()
  if (hex === '000000000000' || hex === 'ffffffffffff') return null
  return hex.match(/../g)!.join(':')
}

/** Product or tier slug: in URLs and buy-page paths. */
export const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and dashes (max 64)')
export const Uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a UUID')
/** An amount in the smallest unit of its currency (sats, cents). */
export const MinorUnits = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)

/** A job id (downloads, updates, installs): in URLs and stream paths. */
export const JobId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a job id')
