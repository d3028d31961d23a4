import type { z } from 'zod'

/**
 * The one error type services throw when a call must fail with a specific status. Anything else
 * that escapes a handler is a 500 with a generic message (details go to the log, redacted).
 */
export type ErrorCode =
  | 'bad_input'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'rate_limited'
  | 'insufficient_quota'
  | 'upstream_unreachable'
  | 'upstream_error'
  | 'unavailable'
  | 'insufficient_storage'
  | 'internal'
  | (string & {})

const statusByCode: Record<string, number> = {
  bad_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  /** A gateway key's token quota for its period is spent (OpenAI's code for it). */
  insufficient_quota: 429,
  internal: 500,
  upstream_unreachable: 502,
  upstream_error: 502,
  unavailable: 503,
  /** A full, over-quota or read-only volume: the message names it and what could not be written. */
  insufficient_storage: 507,
}

export class ApiError extends Error {
  readonly status: number
  readonly code: ErrorCode
  /** Extra response headers, e.g. Retry-After on 503. */
  readonly headers: Record<string, string>
  /** The input field at fault, when one is (OpenAI's `param`). */
  readonly param: string | undefined

  constructor(
    code: ErrorCode,
    message: string,
    opts: { status?: number; headers?: Record<string, string>; param?: string } = {},
  ) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.status = opts.status ?? statusByCode[code] ?? 500
    this.headers = opts.headers ?? {}
    this.param = opts.param
  }
}

export const badInput = (message: string): ApiError => new ApiError('bad_input', message)
export const notFound = (message: string): ApiError => new ApiError('not_found', message)
export const conflict = (message: string): ApiError => new ApiError('conflict', message)

/** A schema refusal in words a caller can act on: the first few issues, each with its field path. */
export function describeZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ')
}
