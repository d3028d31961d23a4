import { z } from 'zod'
import { method, type ContractTable } from './define'
import { page, pageOf } from './page'

/**
 * Named consumer API keys (the gateway's LAN clients) and their usage. A key's secret is shown
 * once, in the answer to its creation; the database holds only its SHA-256.
 */

/** A model id as clients name it (`org/model`, `tts-1`, a local path's basename). */
const ModelName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w.:/@+-]+$/, 'a model id: letters, digits and . : / @ + - _')

export const ConsumerKeyName = z
  .string()
  .trim()
  .min(1)
  .max(80)
  .regex(/^[^\p{Cc}]+$/u, 'no control characters')

const KeyId = z.string().regex(/^[a-f0-9]{16}$/, 'a key id')

export const ConsumerKey = z.object({
  id: z.string(),
  name: z.string(),
  /** The first characters of the secret (`tdm_<prefix>_…`), to tell keys apart. */
  prefix: z.string(),
  created_at: z.number(),
  /** ms since the epoch; null = never expires. */
  expires_at: z.number().nullable(),
  disabled: z.boolean(),
  /** Models the key may name; null = every model. */
  models: z.array(z.string()).nullable(),
  /** null = no limit. */
  requests_per_minute: z.number().nullable(),
  max_concurrent: z.number().nullable(),
  last_used_at: z.number().nullable(),
  /** Requests running under the key now. */
  in_flight: z.number(),
  /** The license that sold the key (a tier with access); null for a key made here. */
  license_id: z.string().nullable(),
})
export type ConsumerKey = z.infer<typeof ConsumerKey>

const Limit = z.number().int().min(1).max(1_000_000)

export const ConsumerKeyCreate = z.object({
  name: ConsumerKeyName,
  expires_at: z.number().int().min(0).nullable().optional(),
  models: z.array(ModelName).max(200).nullable().optional(),
  requests_per_minute: Limit.nullable().optional(),
  max_concurrent: Limit.max(10_000).nullable().optional(),
})
export type ConsumerKeyCreate = z.infer<typeof ConsumerKeyCreate>

export const ConsumerKeyPatch = ConsumerKeyCreate.partial().extend({ disabled: z.boolean().optional() })
export type ConsumerKeyPatch = z.infer<typeof ConsumerKeyPatch>

/** One key's usage in one hour. Token counts marked estimated were counted from stream chunks. */
export const KeyUsageHour = z.object({
  key_id: z.string(),
  hour: z.number(),
  requests: z.number(),
  errors: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  /** Of completion_tokens, how many were estimated (upstream sent no usage): never exact. */
  estimated_completion_tokens: z.number(),
  streams: z.number(),
  /** Sum of time to first token over `streams` (ms); the mean is ttft_ms_sum / streams. */
  ttft_ms_sum: z.number(),
  /** Tokens and seconds of generation over streamed answers: tokens per second = their ratio. */
  stream_tokens: z.number(),
  stream_seconds: z.number(),
  audio_seconds: z.number(),
  speech_characters: z.number(),
})
export type KeyUsageHour = z.infer<typeof KeyUsageHour>

export const consumerKeysContract = {
  consumerKeysList: method({
    summary:
      'Named consumer API keys (never their secrets; paged, oldest first) and whether legacy CONSUMER_API_KEYS are set',
    http: 'GET /api/consumer-keys',
    // Each license that sells access has a key: a page, not every key, however many were sold.
    input: z.object(pageOf(100, 500)),
    output: page('keys', ConsumerKey, 'rows-first').extend({ legacy_keys: z.number(), key_required: z.boolean() }),
  }),
  consumerKeyCreate: method({
    summary: 'Create a named consumer key; the answer holds its secret, shown this once',
    http: 'POST /api/consumer-keys',
    input: ConsumerKeyCreate,
    output: ConsumerKey.extend({ secret: z.string() }),
  }),
  consumerKeyUpdate: method({
    summary: "Change a consumer key's name, expiry, models or limits, or disable/enable it",
    http: 'PATCH /api/consumer-keys/:id',
    input: ConsumerKeyPatch.extend({ id: KeyId }),
    output: ConsumerKey,
  }),
  consumerKeyDelete: method({
    summary: 'Delete a consumer key and its usage',
    http: 'DELETE /api/consumer-keys/:id',
    input: z.object({ id: KeyId }),
    output: z.object({ deleted: z.boolean() }),
  }),
  consumerKeyUsage: method({
    summary: 'Usage per key per hour (90 days kept); totals per key over the range',
    http: 'GET /api/consumer-keys/usage',
    input: z.object({
      hours: z.coerce
        .number()
        .int()
        .min(1)
        .max(90 * 24)
        .default(24),
      key_id: KeyId.optional(),
    }),
    output: z.object({
      from: z.number(),
      hours: z.array(KeyUsageHour),
      totals: z.array(KeyUsageHour),
      /** The name of each key in `totals`, by id (the key list is paged, so it may not hold them all). */
      names: z.record(z.string(), z.string()),
    }),
  }),
} satisfies ContractTable
