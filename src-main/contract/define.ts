import type { z } from 'zod'

/**
 * One API method: its input and output schemas, the HTTP route that serves it, and whether it
 * streams. HTTP routes and IPC handlers are both generated from these entries, so a method is
 * written exactly once.
 */
export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type HttpRoute = `${HttpVerb} /${string}`

/**
 * How errors are shaped on the wire: control `{detail, code}`, licensing `{ok:false, error, message}`,
 * and OpenAI's `{error:{message,type,code,param}}` (with `detail` beside it) on the `/v1` gateway.
 */
export type ErrorStyle = 'control' | 'licensing' | 'openai'

/**
 * The named per-address limiters (platform/limits.ts). A method names one in `limit`; `credential`
 * counts failed credentials on every credentialed surface and is not named by methods.
 */
export type LimiterName = 'login' | 'credential' | 'public' | 'redeem' | 'recover' | 'health-event'

export interface MethodDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly summary: string
  readonly http: HttpRoute
  /** More routes serving the same method (e.g. the spec's provider_a/provider_b paths). */
  readonly aliases?: readonly HttpRoute[]
  readonly input: I
  readonly output: O
  /** Output is a stream of `output` events: SSE over HTTP, an event channel over IPC. */
  readonly stream?: boolean
  readonly errorStyle?: ErrorStyle
  /** Served over HTTP only (e.g. login, buyer endpoints); the desktop window never calls it over IPC. */
  readonly httpOnly?: boolean
  /** Largest JSON body the method reads, in bytes (default 1 MiB); more answers 413. */
  readonly bodyLimit?: number
  /** The per-address limiter each call spends from, over every transport. */
  readonly limit?: LimiterName
  /**
   * For methods that must always answer 200 (the Keysat clients' validate): the answer to input
   * that is unreadable or fails the schema, instead of a 400.
   */
  readonly badInputAnswer?: z.output<O>
  /** Likewise, the answer when the caller is over its `limit`, instead of a 429. */
  readonly rateLimitedAnswer?: z.output<O>
  /**
   * Refuse input fields the schema does not declare (400 naming them) instead of dropping them.
   * Defaults to on for `/v1/admin` methods, where a dropped field silently changes what is saved.
   */
  readonly strictFields?: boolean
}

/** Declares a method; `stream: true` is kept as a literal type so its handler must return an AsyncIterable. */
export function method<I extends z.ZodType, O extends z.ZodType, const S extends boolean = false>(
  def: Omit<MethodDef<I, O>, 'stream'> & { readonly stream?: S },
): MethodDef<I, O> & { readonly stream: S } {
  return { ...def, stream: (def.stream ?? false) as S }
}

export type ContractTable = Record<string, MethodDef>

/** What a handler is told about the call besides its input. */
export interface CallContext {
  readonly via: 'http' | 'ipc'
  /** Client address (after the trusted-proxy rule); undefined over IPC. */
  readonly clientIp?: string
  /** What per-address limits count under (the address, or its IPv6 /64); undefined over IPC. */
  readonly limitKey?: string
  /** On the consumer surface: the id of the named consumer key the request came with; else undefined. */
  readonly consumerKeyId?: string
  /** The caller's User-Agent header, for the logs that record who called; undefined over IPC. */
  readonly userAgent?: string
  /** Response headers the pipeline adds over HTTP (RateLimit-*); ignored over IPC. */
  readonly setHeaders?: (headers: Record<string, string>) => void
  /** Aborted when the caller goes away (HTTP client disconnect, IPC unsubscribe). */
  readonly signal: AbortSignal
  /** Begin or end an admin session. HTTP sets/clears the cookie; IPC is always the operator. */
  readonly session: { begin(): void; end(): void; readonly authenticated: boolean }
}

export type MethodInput<D extends MethodDef> = z.input<D['input']>
export type MethodParsedInput<D extends MethodDef> = z.output<D['input']>
export type MethodOutput<D extends MethodDef> = z.output<D['output']>

export type Handler<D extends MethodDef> = D['stream'] extends true
  ? (input: MethodParsedInput<D>, ctx: CallContext) => AsyncIterable<MethodOutput<D>>
  : (input: MethodParsedInput<D>, ctx: CallContext) => Promise<MethodOutput<D>>

export type Handlers<C extends ContractTable> = { [K in keyof C]: Handler<C[K]> }

/** Path parameters named in a route, e.g. `/api/models/:key/knobs` → ['key']. */
export function routeParams(route: HttpRoute): string[] {
  return [...route.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string)
}

export function splitRoute(route: HttpRoute): { verb: HttpVerb; path: string } {
  const space = route.indexOf(' ')
  return { verb: route.slice(0, space) as HttpVerb, path: route.slice(space + 1) }
}
