import type { ServerResponse } from 'node:http'
import type { ApiError } from '../contract/errors'

/** A comment line every 15 s keeps proxies and idle timeouts from closing a quiet stream. */
export const SSE_HEARTBEAT_MS = 15_000

export interface SseOptions {
  heartbeatMs?: number
}

/**
 * Writes a stream method's items as server-sent events: each item one `data:` line of JSON (with
 * `id:` when it carries a `seq`, so a reconnecting EventSource resumes where it left off), `: hb`
 * comments while idle, an `error` event if the stream fails, and a final `end` event so clients
 * stop reconnecting.
 */
export async function writeSse(
  res: ServerResponse,
  items: AsyncIterable<unknown>,
  signal: AbortSignal,
  toError: (err: unknown) => ApiError,
  opts: SseOptions = {},
): Promise<void> {
  res.statusCode = 200
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8')
  res.setHeader('Cache-Control', 'no-cache, no-transform')
  res.setHeader('X-Accel-Buffering', 'no')
  res.flushHeaders()
  const write = (item: unknown): Promise<void> => {
    const seq = (item as { seq?: unknown }).seq
    const chunk = `${typeof seq === 'number' ? `id: ${seq}\n` : ''}data: ${JSON.stringify(item)}\n\n`
    if (res.write(chunk)) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done)
        res.off('close', done)
        resolve()
      }
      res.on('drain', done)
      res.on('close', done)
    })
  }
  const heartbeat = setInterval(() => {
    if (!res.writableEnded && res.writableLength === 0) res.write(': hb\n\n')
  }, opts.heartbeatMs ?? SSE_HEARTBEAT_MS)
  heartbeat.unref()
  try {
    for await (const item of items) {
      if (signal.aborted) break
      await write(item)
    }
    if (!signal.aborted) res.write('event: end\ndata: {}\n\n')
  } catch (err) {
    const e = toError(err)
    if (!signal.aborted) res.write(`event: error\ndata: ${JSON.stringify({ detail: e.message, code: e.code })}\n\n`)
  } finally {
    clearInterval(heartbeat)
    res.end()
  }
}
