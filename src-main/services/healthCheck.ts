import { httpCall, HttpUnreachable } from '../lib/httpClient'

const HTTP_TIMEOUT_MS = 4000

/** A service's own HTTP answer: its /health, and the model its /v1/models names first. */
export interface HttpHealth {
  ok: boolean
  /** The service answered at all (any HTTP status): an answer with an error is not "still starting". */
  answered: boolean
  ms: number | null
  model: string | null
  error: string | null
}

/** GET /health then /v1/models on the service itself. */
export async function httpHealth(baseUrl: string, signal?: AbortSignal): Promise<HttpHealth> {
  const t0 = performance.now()
  const timeout = AbortSignal.timeout(HTTP_TIMEOUT_MS)
  const sig = signal ? AbortSignal.any([signal, timeout]) : timeout
  try {
    const health = await httpCall(`${baseUrl}/health`, { signal: sig })
    health.discard()
    const ms = Math.round(performance.now() - t0)
    if (!health.ok) return { ok: false, answered: true, ms, model: null, error: `HTTP ${health.status} from /health` }
    let model: string | null = null
    try {
      const models = await httpCall(`${baseUrl}/v1/models`, { signal: sig })
      if (models.ok) {
        const body = (await models.json()) as { data?: { id?: unknown }[] }
        const id = body.data?.[0]?.id
        model = typeof id === 'string' ? id : null
      } else models.discard()
    } catch {
      // health answered; the model list is optional
    }
    return { ok: true, answered: true, ms, model, error: null }
  } catch (err) {
    const e = err as Error
    const reason =
      e.name === 'TimeoutError'
        ? `no answer within ${HTTP_TIMEOUT_MS / 1000} s`
        : e instanceof HttpUnreachable
          ? (e.code ?? e.message)
          : e.message
    return { ok: false, answered: false, ms: null, model: null, error: reason }
  }
}
