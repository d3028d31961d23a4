import { z } from 'zod'
import { method, type ContractTable } from '../define'

/** The validation log under /v1/admin (control error style, times as epoch milliseconds). */

export const ValidationKind = z.enum(['validate', 'activate', 'heartbeat', 'deactivate'])
export type ValidationKind = z.infer<typeof ValidationKind>

export const ValidationEntry = z.object({
  id: z.number(),
  at: z.number(),
  kind: ValidationKind,
  /** The license the key resolved to; null when it resolved to none. */
  license_id: z.string().nullable(),
  /** For a key that resolved to no license: the first 128 bits of its SHA-256 (hex). */
  key_hash: z.string().nullable(),
  ok: z.boolean(),
  /** 'ok', or why the call was refused (the reason the caller got). */
  result: z.string(),
  /** SHA-256 (hex) of the machine fingerprint the call named, if any. */
  fingerprint_hash: z.string().nullable(),
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
})
export type ValidationEntry = z.infer<typeof ValidationEntry>

const Bool = z.union([z.boolean(), z.stringbool()])

/** The validation log's own state: calls it could not record are counted, never silently lost. */
export const ValidationRecording = z.object({
  /** False while batches fail (the disk is full): calls are counted, not recorded. */
  recording: z.boolean(),
  /** Calls never recorded since the daemon started. */
  unrecorded_calls: z.number().int().min(0),
  /** When the first of them was lost (epoch ms); null when none. */
  unrecorded_since: z.number().nullable(),
  /** When the current failure began (epoch ms); null while recording. */
  failing_since: z.number().nullable(),
})
export type ValidationRecording = z.infer<typeof ValidationRecording>

export const licensingValidationsContract = {
  licAdminValidations: method({
    summary: 'The validation log (validate, activate, heartbeat, deactivate calls), newest first',
    http: 'GET /v1/admin/validations',
    input: z.object({
      license_id: z.string().min(1).max(64).optional(),
      kind: ValidationKind.optional(),
      ok: Bool.optional(),
      limit: z.coerce.number().int().min(1).max(1000).default(50),
      before_id: z.coerce.number().int().min(1).optional(),
    }),
    output: z.array(ValidationEntry),
  }),
  licAdminValidationsDaily: method({
    summary: 'Validation-log calls per day by kind and result',
    http: 'GET /v1/admin/validations/daily',
    input: z.object({ days: z.coerce.number().int().min(1).max(366).default(30) }),
    output: z.object({
      from_day: z.string(),
      to_day: z.string(),
      rows: z.array(z.object({ day: z.string(), kind: ValidationKind, result: z.string(), count: z.number() })),
    }),
  }),
  licAdminValidationRecording: method({
    summary: 'Whether validation calls are being recorded, and how many were not (a full disk, a log that fell behind)',
    http: 'GET /v1/admin/validations/recording',
    input: z.object({}),
    output: ValidationRecording,
  }),
} satisfies ContractTable
