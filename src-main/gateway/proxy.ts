import type http from 'node:http'
import { ApiError } from '../contract/errors'
import type { Logger } from '../core/logger'
import type { Upstream } from './upstreams'
import { callUpstream, MiB, parseJsonObject, passHeaders, readText, upstreamDetail, UpstreamUnreachable } from './wire'
import { ClientGone, readBody } from '../http/body'
import { sendError } from '../http/respond'
import type { UsageMeter } from './usageMeter'

/**
 * Forwards an OpenAI-shaped JSON request verbatim (spec 1, 4.9 rule 2): the body bytes go upstream
 * untouched once they parse as a JSON object. `stream: true` answers are piped chunk by chunk with
 * backpressure and no buffering; the client's disconnect aborts the upstream call.
 */
export interface ForwardOptions {
  readonly path: string
  readonly timeoutMs: number
  readonly bodyLimit: number
  readonly logger: Logger
  /** Called once the answer is known to be a stream (request log). */
  onStreamed?(): void
  /** Waits until the request may go upstream (a model swap); aborted when the client leaves. */
  admit?(body: Record<string, unknown>, signal: AbortSignal): Promise<void>
  /** Usage accounting (tokens, TTFT, tokens/s); absent when accounting is off. */
  usage?: UsageMeter
}

export async function forwardJson(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  up: Upstream,
  opts: ForwardOptions,
): Promise<void> {
  const received = await readBody(req, opts.bodyLimit)
  const body = parseJsonObject(received)
  const streaming = body.stream === true
  const raw = opts.usage ? opts.usage.prepareRequest(body, received) : received
  if (opts.admit) await admitOrLeave(res, (signal) => opts.admit!(body, signal))

  const ac = new AbortController()
  const onClientGone = (): void => {
    if (!res.writableFinished) ac.abort(new Error('client disconnected'))
  }
  res.once('close', onClientGone)
  const timer = setTimeout(
    () =>
      ac.abort(
        new ApiError('upstream_timeout', `${up.name} did not finish within ${Math.round(opts.timeoutMs / 60000)} min`, {
          status: 504,
        }),
      ),
    opts.timeoutMs,
  )
  timer.unref()
  const done = (): void => {
    clearTimeout(timer)
    res.off('close', onClientGone)
  }

  let upRes: http.IncomingMessage
  try {
    upRes = await callUpstream(up, {
      method: 'POST',
      path: opts.path,
      headers: { 'content-type': 'application/json', accept: streaming ? 'text/event-stream' : 'application/json' },
      body: raw,
      signal: ac.signal,
    })
  } catch (err) {
    done()
    if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
    if (err instanceof ApiError) throw err
    if (res.destroyed) return
    throw new ApiError('upstream_unreachable', `${up.name} is unreachable at ${up.base}: ${(err as Error).message}`)
  }
  const status = upRes.statusCode ?? 502

  if (streaming && status !== 200) {
    // Spec 1, 6.1: exactly one SSE event named `error` carrying the upstream's error, then the end.
    opts.onStreamed?.()
    let text: string
    try {
      text = await readText(upRes)
    } catch {
      text = ''
    }
    done()
    res.writeHead(200, sseHeaders())
    res.end(`event: error\ndata: ${errorEventData(status, text, up.name)}\n\n`)
    return
  }

  const isSse = streaming || String(upRes.headers['content-type'] ?? '').startsWith('text/event-stream')
  // An upstream's error answer: in OpenAI's shape, so the official clients show its message.
  if (!isSse && status >= 400) return answerUpstreamError(res, upRes, up).finally(done)
  if (isSse) opts.onStreamed?.()
  res.writeHead(status, isSse ? { ...passHeaders(upRes, ['content-length']), ...sseHeaders() } : passHeaders(upRes))
  if (isSse) res.flushHeaders()

  await new Promise<void>((resolve) => {
    let finished = false
    const finish = (): void => {
      if (finished) return
      finished = true
      done()
      resolve()
    }
    const flushNow = isSse ? relayCoalesced(upRes, res, finish, opts.usage) : null
    // A plain answer is read for its `usage` as it passes.
    if (!isSse) (opts.usage?.watchBody(upRes) ?? upRes).pipe(res, { end: false })
    upRes.once('end', () => {
      if (!isSse) {
        res.end()
        finish()
      }
    })
    upRes.once('error', () => undefined)
    upRes.once('close', () => {
      if (upRes.complete || res.destroyed) return finish()
      // The upstream went away mid-answer: end the client's stream with an error, never leave it hanging.
      upRes.unpipe(res)
      flushNow?.()
      const reason: unknown = ac.signal.reason
      const message =
        reason instanceof ApiError ? reason.message : `${up.name} closed the connection before the answer was complete`
      opts.logger.warn('upstream ended mid-response', { path: opts.path, upstream: up.name })
      if (isSse)
        res.end(
          `\n\nevent: error\ndata: ${JSON.stringify({ error: { message, type: 'upstream_error', code: 502 } })}\n\n`,
        )
      else res.destroy()
      finish()
    })
    res.once('close', finish)
  })
}

/** Waits at the gate; a client that leaves meanwhile is released and nothing goes upstream. */
async function admitOrLeave(res: http.ServerResponse, wait: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const left = new AbortController()
  const onClose = (): void => left.abort(new ClientGone())
  if (res.destroyed) throw new ClientGone()
  res.once('close', onClose)
  try {
    await wait(left.signal)
  } finally {
    res.off('close', onClose)
  }
  if (left.signal.aborted || res.destroyed) throw new ClientGone()
}

/**
 * Pipes an event stream, joining the chunks that arrive in one event-loop turn into one write:
 * the upstream sends one tiny chunk per token, and a write per token would cost a syscall each
 * on both sides. Backpressure: the upstream pauses while the client's socket is full.
 */
function relayCoalesced(
  src: http.IncomingMessage,
  res: http.ServerResponse,
  onEnd: () => void,
  meter?: UsageMeter,
): () => void {
  let pending: Buffer[] = []
  let scheduled = false
  const flush = (): void => {
    scheduled = false
    if (pending.length === 0 || res.destroyed || res.writableEnded) return
    const out = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
    pending = []
    if (!res.write(out)) {
      src.pause()
      res.once('drain', () => src.resume())
    }
  }
  src.on('data', (c: Buffer) => {
    pending.push(meter ? meter.onSseChunk(c) : c)
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  })
  src.once('end', () => {
    // The last bytes and the end of the chunked body in one write.
    if (meter) pending.push(meter.flushSse())
    const rest = pending.length === 0 ? undefined : Buffer.concat(pending)
    pending = []
    if (!res.destroyed && !res.writableEnded) res.end(rest)
    onEnd()
  })
  return flush
}

export function sseHeaders(): http.OutgoingHttpHeaders {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  }
}

/** An upstream's error answer in OpenAI's shape; passed on as it is when it already has that shape. */
async function answerUpstreamError(res: http.ServerResponse, upRes: http.IncomingMessage, up: Upstream): Promise<void> {
  const status = upRes.statusCode ?? 502
  const text = await readText(upRes).catch(() => '')
  if (hasErrorObject(text)) {
    res.writeHead(status, passHeaders(upRes, ['content-length']))
    res.end(text)
    return
  }
  const detail = `${up.name} answered HTTP ${status}: ${upstreamDetail(text)}`
  sendError(res, new ApiError('upstream_error', detail, { status }), 'openai')
}

/** True when a body is already OpenAI's error shape: a JSON object with an `error` object. */
function hasErrorObject(text: string): boolean {
  try {
    const v = JSON.parse(text) as { error?: unknown }
    return v !== null && typeof v === 'object' && v.error !== null && typeof v.error === 'object'
  } catch {
    return false
  }
}

/** The upstream's error as an OpenAI-style `{error: {...}}` object (the shape the openai client raises). */
export function errorEventData(status: number, text: string, upstream: string): string {
  // Re-serialised: an SSE data line must not contain the body's own line breaks.
  if (hasErrorObject(text)) return JSON.stringify(JSON.parse(text))
  return JSON.stringify({
    error: {
      message: `${upstream} answered HTTP ${status}: ${upstreamDetail(text)}`,
      type: 'upstream_error',
      code: status,
    },
  })
}

export const JSON_BODY_LIMIT = 64 * MiB
