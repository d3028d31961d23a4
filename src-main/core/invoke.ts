import type { z } from 'zod'
import { contract, type MethodName } from '../contract'
import type { CallContext, MethodDef } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { Logger } from './logger'

/**
 * The one path from "a caller asked for method M with this raw input" to a result, shared by
 * the HTTP and IPC adapters: look the method up, parse the input with its schema, run the
 * handler, and shape the output through its schema (which also drops any field the contract
 * does not declare, so nothing unlisted leaks to a caller).
 */
export type AnyHandler = (input: unknown, ctx: CallContext) => Promise<unknown> | AsyncIterable<unknown>

export function methodDef(name: string): MethodDef {
  const def = (contract as Record<string, MethodDef>)[name]
  if (!def) throw new ApiError('not_found', `no method ${name}`)
  return def
}

export function parseInput(def: MethodDef, raw: unknown): unknown {
  const res = def.input.safeParse(raw ?? {})
  if (!res.success) throw new ApiError('bad_input', describeZodError(res.error))
  return res.data
}

export function describeZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ')
}

function shapeOutput(def: MethodDef, name: string, value: unknown, logger: Logger): unknown {
  const res = def.output.safeParse(value)
  if (!res.success) {
    logger.error(`method ${name} returned output that does not match its contract`, {
      issues: describeZodError(res.error),
    })
    throw new ApiError('internal', `${name} produced an invalid response`)
  }
  return res.data
}

export async function invokeMethod(
  handlers: Record<string, AnyHandler>,
  name: MethodName | string,
  rawInput: unknown,
  ctx: CallContext,
  logger: Logger,
): Promise<unknown> {
  const def = methodDef(name)
  if (def.stream) throw new ApiError('bad_input', `${name} is a stream; subscribe to it`)
  const input = parseInput(def, rawInput)
  const handler = handlers[name]
  if (!handler) throw new ApiError('not_found', `no handler for ${name}`)
  const out = await (handler(input, ctx) as Promise<unknown>)
  return shapeOutput(def, name, out, logger)
}

/**
 * Opens a stream method. Input parsing and the handler call happen now, so a bad input or an
 * unknown id fails before the caller commits to a stream; items are shaped as they come.
 */
export function openStream(
  handlers: Record<string, AnyHandler>,
  name: string,
  rawInput: unknown,
  ctx: CallContext,
  logger: Logger,
): AsyncIterable<unknown> {
  const def = methodDef(name)
  if (!def.stream) throw new ApiError('bad_input', `${name} is not a stream`)
  const input = parseInput(def, rawInput)
  const handler = handlers[name]
  if (!handler) throw new ApiError('not_found', `no handler for ${name}`)
  const source = handler(input, ctx) as AsyncIterable<unknown>
  return (async function* shaped() {
    for await (const item of source) {
      if (ctx.signal.aborted) return
      yield shapeOutput(def, name, item, logger)
    }
  })()
}

/** Turns anything thrown into the status, code and message a caller may see. */
export function toPublicError(err: unknown, logger: Logger): ApiError {
  if (err instanceof ApiError) return err
  logger.error('unhandled error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
  return new ApiError('internal', 'internal error; see the daemon log')
}
