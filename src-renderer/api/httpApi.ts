import { createParser } from 'eventsource-parser'
import { routes } from 'virtual:contract-data'
import type { MethodName } from '../../src-main/contract'
import type { HttpVerb } from '../../src-main/contract/define'
import {
  ABORTED,
  BackendError,
  type BackendApi,
  type CallOptions,
  type InputOf,
  type OutputOf,
  type StreamHandlers,
} from './backend'

/** Fills `:param` segments from the input; the rest goes to the query (GET/DELETE) or the JSON body. */
export function buildRequest(
  [verb, path]: readonly [HttpVerb, string],
  input: Record<string, unknown>,
): { verb: string; path: string; body?: string } {
  const rest: Record<string, unknown> = { ...input }
  const filled = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_m, name: string) => {
    const v = rest[name]
    delete rest[name]
    return encodeURIComponent(String(v ?? ''))
  })
  if (verb === 'GET' || verb === 'DELETE') {
    const qs = new URLSearchParams()
    for (const [k, v] of Object.entries(rest)) if (v !== undefined && v !== null) qs.set(k, String(v))
    const q = qs.toString()
    return { verb, path: q ? `${filled}?${q}` : filled }
  }
  return { verb, path: filled, body: JSON.stringify(rest) }
}

async function errorFrom(res: Response): Promise<BackendError> {
  let message = `${res.status} ${res.statusText}`
  let code = 'http_error'
  try {
    const body = (await res.json()) as { detail?: string; message?: string; code?: string; error?: string }
    message = body.detail ?? body.message ?? message
    code = body.code ?? body.error ?? code
  } catch {
    // not JSON: keep the status line
  }
  return new BackendError(message, code, res.status)
}

/** The browser implementation: fetch for calls, EventSource for streams; the session cookie rides along. */
export function httpApi(origin: string, onUnauthorized: () => void = () => undefined): BackendApi {
  return {
    transport: 'http',
    async call<M extends MethodName>(method: M, input: InputOf<M>, opts: CallOptions = {}): Promise<OutputOf<M>> {
      const req = buildRequest(routes[method], (input ?? {}) as Record<string, unknown>)
      let res: Response
      try {
        res = await fetch(origin + req.path, {
          method: req.verb,
          credentials: 'same-origin',
          headers: req.body !== undefined ? { 'Content-Type': 'application/json' } : undefined,
          body: req.body,
          signal: opts.signal,
        })
      } catch (err) {
        if (opts.signal?.aborted) throw new BackendError('the call was cancelled', ABORTED, 0)
        throw err
      }
      if (!res.ok) {
        const err = await errorFrom(res)
        if (res.status === 401 && method !== 'login') onUnauthorized()
        throw err
      }
      return (await res.json()) as OutputOf<M>
    },
    subscribe<M extends MethodName>(method: M, input: InputOf<M>, h: StreamHandlers<OutputOf<M>>): () => void {
      const req = buildRequest(routes[method], (input ?? {}) as Record<string, unknown>)
      // EventSource can only GET; a POST stream (explain-updates) is read from a fetch body.
      if (req.verb !== 'GET') return postStream(origin, req, h)
      const es = new EventSource(origin + req.path, { withCredentials: false })
      es.onmessage = (e: MessageEvent<string>) => h.onEvent(JSON.parse(e.data) as OutputOf<M>)
      es.addEventListener('end', () => {
        es.close()
        h.onEnd?.()
      })
      es.addEventListener('error', (e: Event) => {
        const data = (e as MessageEvent<string>).data
        if (typeof data === 'string' && data !== '') {
          const body = JSON.parse(data) as { detail: string; code: string }
          es.close()
          h.onError?.(new BackendError(body.detail, body.code, 500))
        } else if (es.readyState === EventSource.CLOSED) {
          h.onError?.(new BackendError('stream closed', 'stream_closed', 0))
        }
      })
      return () => es.close()
    },
  }
}

/** A stream method over POST: the SSE body read with fetch; a refusal (409, 503) arrives as onError with its status. */
function postStream<T>(
  origin: string,
  req: { verb: string; path: string; body?: string },
  h: StreamHandlers<T>,
): () => void {
  const abort = new AbortController()
  void (async () => {
    let res: Response
    try {
      res = await fetch(origin + req.path, {
        method: req.verb,
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: req.body,
        signal: abort.signal,
      })
    } catch {
      if (!abort.signal.aborted) h.onError?.(new BackendError('the stream could not be opened', 'stream_closed', 0))
      return
    }
    if (!res.ok || !res.body) return h.onError?.(await errorFrom(res))
    let ended = false
    const parser = createParser({
      onEvent: (e) => {
        if (e.event === 'end') {
          ended = true
          h.onEnd?.()
        } else if (e.event === 'error') {
          ended = true
          const body = JSON.parse(e.data) as { detail: string; code: string }
          h.onError?.(new BackendError(body.detail, body.code, 500))
        } else h.onEvent(JSON.parse(e.data) as T)
      },
    })
    const decoder = new TextDecoder()
    const reader = res.body.getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        parser.feed(decoder.decode(value, { stream: true }))
      }
    } catch {
      // aborted by the caller, or the connection dropped (reported below)
    }
    if (!ended && !abort.signal.aborted) h.onError?.(new BackendError('stream closed', 'stream_closed', 0))
  })()
  return () => abort.abort()
}
