import type { z } from 'zod'
import { ApiError } from '../../contract/errors'
import { httpCall, HttpBodyTooLarge, type HttpAnswer } from '../../lib/httpClient'

const TIMEOUT_MS = 15_000
const MAX_BODY = 1024 * 1024

export interface ProviderRequest {
  readonly method: 'GET' | 'POST'
  readonly url: string
  readonly authorization: string
  readonly body?: unknown
  readonly signal?: AbortSignal
}

/**
 * One request to a payment provider, its JSON answer parsed with `schema`. Failures become
 * ApiErrors whose messages name the provider and status but never the credential or the body
 * (which may echo it).
 */
export async function providerJson<T>(provider: string, req: ProviderRequest, schema: z.ZodType<T>): Promise<T> {
  const signals = [AbortSignal.timeout(TIMEOUT_MS), ...(req.signal ? [req.signal] : [])]
  let res: HttpAnswer
  try {
    res = await httpCall(req.url, {
      method: req.method,
      headers: {
        authorization: req.authorization,
        accept: 'application/json',
        ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      signal: AbortSignal.any(signals),
    })
  } catch (err) {
    throw new ApiError('upstream_unreachable', `${provider} is unreachable: ${(err as Error).message}`)
  }
  const text = await res.text(MAX_BODY).catch((err: unknown) => {
    if (err instanceof HttpBodyTooLarge) throw new ApiError('upstream_error', `${provider} answer too large`)
    throw new ApiError('upstream_unreachable', `${provider} answer was cut off: ${(err as Error).message}`)
  })
  if (res.status === 401 || res.status === 403) {
    throw new ApiError('upstream_refused', `${provider} refused the credentials (HTTP ${res.status})`, { status: 502 })
  }
  if (res.status === 404) throw new ApiError('upstream_not_found', `${provider} has no such record`, { status: 502 })
  if (!res.ok) throw new ApiError('upstream_error', `${provider} answered HTTP ${res.status}`)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new ApiError('upstream_error', `${provider} answered with something that is not JSON`)
  }
  const parsed = schema.safeParse(json)
  if (!parsed.success) {
    throw new ApiError(
      'upstream_error',
      `${provider} answered in an unexpected shape: ${parsed.error.issues[0]?.message}`,
    )
  }
  return parsed.data
}

/** Joins a validated base URL and a path whose dynamic parts the caller already encoded. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path
}
