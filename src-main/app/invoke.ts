import { contract, type MethodName } from '../contract'
import { routeParams, type CallContext, type MethodDef } from '../contract/define'
import { ApiError, describeZodError } from '../contract/errors'
import type { CallerScope } from '../platform/callerScope'
import { limitHeaders, rateLimitedError, type Limits } from '../platform/limits'
import { asDatabaseFull, DatabaseFull, StorageFull } from '../lib/files'
import type { Logger } from '../lib/logger'
import { refusesUnknownFields, unknownFields } from './unknownFields'

/**
 * The one path from "a caller asked for method M with this raw input" to a result, shared by
 * the HTTP and IPC adapters: look the method up, spend its rate limit, parse the input with its
 * schema, run the handler, and shape the output through its schema (which also drops any field
 * the contract does not declare, so nothing unlisted leaks to a caller).
 */
export type AnyHandler = (input: unknown, ctx: CallContext) => Promise<unknown> | AsyncIterable<unknown>

/** What the pipeline needs besides the call itself. */
export interface Dispatcher {
  readonly handlers: Readonly<Record<string, AnyHandler>>
  readonly limits: Limits
  readonly logger: Logger
  /** Where handlers (and the audit log below them) find who is calling. */
  readonly callers?: CallerScope
  /** DATA_DIR, where the databases live: a SQLite write that finds it full is answered 507. */
  readonly dataDir?: string
}

export function methodDef(name: string): MethodDef {
  const def = Object.hasOwn(contract, name) ? (contract as Record<string, MethodDef>)[name] : undefined
  if (!def) throw new ApiError('not_found', `no method ${name}`)
  return def
}

const paramsOf = new WeakMap<MethodDef, ReadonlySet<string>>()

/** Path parameters of a method's route: input that fails on one of these names an unknown thing. */
function pathParams(def: MethodDef): ReadonlySet<string> {
  let set = paramsOf.get(def)
  if (!set) {
    set = new Set(routeParams(def.http))
    paramsOf.set(def, set)
  }
  return set
}

/**
 * Parses raw input. A path parameter that fails its schema is an unknown thing (404); anything
 * else that fails is bad input (400) naming the field.
 */
export function parseInput(def: MethodDef, raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ApiError('bad_input', 'the input must be a JSON object')
  if (refusesUnknownFields(def)) {
    const unknown = unknownFields(def.input, raw)
    if (unknown.length > 0)
      throw new ApiError(
        'bad_input',
        `unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 10).join(', ')}`,
        {
          param: unknown[0],
        },
      )
  }
  const res = def.input.safeParse(raw)
  if (res.success) return res.data
  const params = pathParams(def)
  const onParam = res.error.issues.find((i) => typeof i.path[0] === 'string' && params.has(i.path[0]))
  if (onParam) {
    const name = onParam.path[0] as string
    throw new ApiError('not_found', `no such ${name}: ${String((raw as Record<string, unknown>)[name]).slice(0, 80)}`)
  }
  const first = res.error.issues[0]
  const param = first && first.path.length > 0 ? first.path.join('.') : undefined
  throw new ApiError('bad_input', describeZodError(res.error), param === undefined ? {} : { param })
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

/** Spends the method's limit; a refusal is an error, or the method's declared answer. */
function spendLimit(d: Dispatcher, def: MethodDef, ctx: CallContext): { answer: unknown } | null {
  if (!def.limit) return null
  // The desktop window has no address: it is the operator, one caller, counted as one.
  const state = d.limits.take(def.limit, ctx.limitKey ?? 'ipc')
  ctx.setHeaders?.(limitHeaders(state))
  if (state.ok) return null
  if (def.rateLimitedAnswer !== undefined) return { answer: def.rateLimitedAnswer }
  throw rateLimitedError(state, 'too many requests from this address; try again shortly')
}

/** The method's schema-checked input, or its declared answer to bad input. */
function inputOrAnswer(def: MethodDef, raw: unknown): { input: unknown } | { answer: unknown } {
  try {
    return { input: parseInput(def, raw) }
  } catch (err) {
    if (def.badInputAnswer !== undefined && err instanceof ApiError && err.code === 'bad_input')
      return { answer: def.badInputAnswer }
    throw err
  }
}

function handlerOf(d: Dispatcher, name: string): AnyHandler {
  const handler = Object.hasOwn(d.handlers, name) ? d.handlers[name] : undefined
  if (!handler) throw new ApiError('not_found', `no handler for ${name}`)
  return handler
}

export async function invokeMethod(
  d: Dispatcher,
  name: MethodName | string,
  rawInput: unknown,
  ctx: CallContext,
): Promise<unknown> {
  const def = methodDef(name)
  if (def.stream) throw new ApiError('bad_input', `${name} is a stream; subscribe to it`)
  const limited = spendLimit(d, def, ctx)
  if (limited) return limited.answer
  const parsed = inputOrAnswer(def, rawInput)
  if ('answer' in parsed) return parsed.answer
  const handler = handlerOf(d, name)
  const call = () => handler(parsed.input, ctx) as Promise<unknown>
  let out: unknown
  try {
    out = await (d.callers ? d.callers.run(ctx, call) : call())
  } catch (err) {
    throw asDatabaseFull(err, d.dataDir, whatOf(def))
  }
  return shapeOutput(def, name, out, d.logger)
}

/** What a method does, in the words of its summary ("Create a product" → "create a product"). */
function whatOf(def: MethodDef): string {
  const head = def.summary.split(/[;:(]/, 1)[0]!.trim()
  return head.charAt(0).toLowerCase() + head.slice(1)
}

/**
 * Opens a stream method. Limits, input parsing and the handler call happen now, so a bad input or
 * an unknown id fails before the caller commits to a stream; items are shaped as they come.
 */
export function openStream(d: Dispatcher, name: string, rawInput: unknown, ctx: CallContext): AsyncIterable<unknown> {
  const def = methodDef(name)
  if (!def.stream) throw new ApiError('bad_input', `${name} is not a stream`)
  spendLimit(d, def, ctx)
  const input = parseInput(def, rawInput)
  const handler = handlerOf(d, name)
  const call = () => handler(input, ctx) as AsyncIterable<unknown>
  const source = d.callers ? d.callers.run(ctx, call) : call()
  return (async function* shaped() {
    for await (const item of source) {
      if (ctx.signal.aborted) return
      yield shapeOutput(def, name, item, d.logger)
    }
  })()
}

/** Turns anything thrown into the status, code and message a caller may see. */
export function toPublicError(err: unknown, logger: Logger): ApiError {
  if (err instanceof ApiError) {
    // The message reaches a client: no secret and no password inside a URL.
    const message = logger.redactor.redact(err.message)
    if (message === err.message) return err
    return new ApiError(err.code, message, { status: err.status, headers: err.headers, param: err.param })
  }
  if (err instanceof StorageFull) {
    logger.error(
      err instanceof DatabaseFull ? 'a database could not be written' : 'a state file could not be written',
      {
        file: err.file,
        error: err.message,
      },
    )
    return new ApiError('insufficient_storage', logger.redactor.redact(err.message))
  }
  logger.error('unhandled error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
  return new ApiError('internal', 'internal error; see the daemon log')
}
