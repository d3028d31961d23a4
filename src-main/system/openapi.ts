/**
 * The OpenAPI 3.1 document of the contract, generated from its zod schemas (zod 4's JSON Schema
 * output): every method with its route, parameters, body, answer and error shape. Nothing here is
 * written by hand per method, so a method added to the table is documented by being added. The
 * gateway's relays, raw routes outside the contract, come from their descriptions in relays.ts.
 *
 * Two audiences: `public` documents what anyone on the network may call (the licensing buyer API
 * and the consumer gateway), `full` documents every method, admin ones included.
 */
import { z } from 'zod'
import { SESSION_COOKIE } from '../http/session'
import { allowsAnyOrigin, isOriginGuarded, surfaceOf, type Surface } from '../http/surfaces'
import {
  routeParams,
  splitRoute,
  type ContractTable,
  type ErrorStyle,
  type HttpRoute,
  type MethodDef,
} from '../contract/define'
import { gatewayRelays, type RelayDef, type RelayError } from '../contract/relays'

export type OpenApiAudience = 'public' | 'full'
type Json = Record<string, unknown>

export interface OpenApiOptions {
  readonly audience: OpenApiAudience
  readonly version: string
  /** Base URL the document names as its server (PUBLIC_URL); none = the host that served it. */
  readonly serverUrl?: string | null
}

export interface OpenApiDocument extends Json {
  openapi: '3.1.0'
  info: { title: string; version: string; description: string }
  paths: Record<string, Record<string, Json>>
}

const PUBLIC_SURFACES: ReadonlySet<Surface> = new Set(['licensing-public', 'consumer'])

/**
 * A zod schema as JSON Schema (draft 2020-12, OpenAPI 3.1's dialect). Types JSON Schema cannot
 * express become `{}` (any), and a schema that fails to convert at all is documented as `{}`:
 * the document must never fail because one method has an exotic schema.
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output', id?: string): Json {
  try {
    const js = z.toJSONSchema(schema, { io, unrepresentable: 'any', cycles: 'ref', reused: 'inline' }) as Json
    delete js.$schema
    // Local references (#/$defs/…) must resolve inside this schema, not against the whole document.
    if (id !== undefined && (js.$defs !== undefined || JSON.stringify(js).includes('"$ref":"#'))) js.$id = id
    return js
  } catch {
    return {}
  }
}

const errorSchemas: Record<ErrorStyle, Json> = {
  control: {
    type: 'object',
    description: 'Control API and licensing admin errors.',
    properties: { detail: { type: 'string' }, code: { type: 'string' } },
    required: ['detail', 'code'],
  },
  licensing: {
    type: 'object',
    description: 'Licensing public endpoint errors (the Keysat client SDKs read these).',
    properties: { ok: { const: false }, error: { type: 'string' }, message: { type: 'string' } },
    required: ['ok', 'error', 'message'],
  },
  openai: {
    type: 'object',
    description:
      'OpenAI-shaped errors of the /v1 gateway routes: `error` for the official clients, `detail` beside it.',
    properties: {
      error: {
        type: 'object',
        properties: {
          message: { type: 'string' },
          type: { type: 'string' },
          code: { type: 'string' },
          param: { type: ['string', 'null'] },
        },
        required: ['message', 'type', 'code', 'param'],
      },
      detail: { type: 'string' },
    },
    required: ['error', 'detail'],
  },
}
const errorSchemaName: Record<ErrorStyle, string> = {
  control: 'ControlError',
  licensing: 'LicensingError',
  openai: 'OpenAIError',
}

function securityOf(surface: Surface): Json[] | undefined {
  if (surface === 'control' || surface === 'licensing-admin') return [{ adminBearer: [] }, { adminSession: [] }]
  // Open on the LAN unless CONSUMER_API_KEYS is set; then a bearer key.
  if (surface === 'consumer') return [{}, { consumerBearer: [] }]
  return []
}

/** The error style a surface answers in on a path (as http/requestState.ts styleFor). */
function surfaceStyle(surface: Surface, path: string): ErrorStyle {
  if (surface === 'licensing-public') return 'licensing'
  if (surface === 'consumer' && path.startsWith('/v1/')) return 'openai'
  return 'control'
}

/** The error style a method answers in: its own, else the one its surface uses for that path. */
function styleOf(def: MethodDef, surface: Surface, path: string): ErrorStyle {
  return def.errorStyle ?? surfaceStyle(surface, path)
}

const errorRef = (style: ErrorStyle): Json => ({ $ref: `#/components/schemas/${errorSchemaName[style]}` })

function errorResponses(def: MethodDef, surface: Surface, style: ErrorStyle, verb: string): Record<string, Json> {
  const ref = (description: string): Json => ({
    description,
    content: { 'application/json': { schema: errorRef(style) } },
  })
  const out: Record<string, Json> = {}
  if (def.badInputAnswer === undefined) out['400'] = ref('Bad input: the message names the field.')
  if (surface === 'control' || surface === 'licensing-admin' || surface === 'consumer')
    out['401'] = ref('No or bad credential.')
  if (isOriginGuarded(surface) && verb !== 'get') out['403'] = ref('Refused by the same-origin guard.')
  if (routeParams(def.http).length > 0) out['404'] = ref('No such thing (a path parameter names nothing).')
  if (def.limit && def.rateLimitedAnswer === undefined) out['429'] = ref('Over the per-address limit; see Retry-After.')
  out.default = ref('Any other error (409 refused because of state, 502 upstream, 503 unavailable with Retry-After).')
  return out
}

function properties(schema: Json): { props: Record<string, Json>; required: string[] } | null {
  if (schema.type !== 'object' || typeof schema.properties !== 'object' || schema.properties === null) return null
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : []
  return { props: schema.properties as Record<string, Json>, required }
}

/** The input's parameters and body: path parameters, then the query (GET, DELETE) or a JSON body. */
function inputParts(name: string, def: MethodDef, verb: string): { parameters: Json[]; requestBody?: Json } {
  const inPath = routeParams(def.http)
  const input = jsonSchemaOf(def.input, 'input', `urn:tandem:${name}:input`)
  const shape = properties(input)
  const parameters: Json[] = inPath.map((p) => ({
    name: p,
    in: 'path',
    required: true,
    schema: shape?.props[p] ?? { type: 'string' },
  }))
  const rest = shape ? Object.fromEntries(Object.entries(shape.props).filter(([k]) => !inPath.includes(k))) : null
  const restRequired = shape ? shape.required.filter((k) => !inPath.includes(k)) : []
  if (verb === 'get' || verb === 'delete') {
    for (const [k, schema] of Object.entries(rest ?? {}))
      parameters.push({ name: k, in: 'query', required: restRequired.includes(k), schema })
    return { parameters }
  }
  if (rest !== null && Object.keys(rest).length === 0) return { parameters }
  const body: Json = rest === null ? input : { ...input, properties: rest, required: restRequired }
  if (Array.isArray(body.required) && body.required.length === 0) delete body.required
  return {
    parameters,
    requestBody: { required: restRequired.length > 0, content: { 'application/json': { schema: body } } },
  }
}

function successResponse(name: string, def: MethodDef): Json {
  const schema = jsonSchemaOf(def.output, 'output', `urn:tandem:${name}:output`)
  if (def.stream)
    return {
      description: 'A stream of server-sent events; each `data:` line is one JSON item of `x-item-schema`.',
      content: { 'text/event-stream': { schema: { type: 'string' }, 'x-item-schema': schema } },
    }
  const always200 =
    def.badInputAnswer !== undefined ? ' Refusals are answered 200 too, with `ok: false` and a `reason`.' : ''
  return { description: `OK.${always200}`, content: { 'application/json': { schema } } }
}

/** One method as an OpenAPI operation, with its path in OpenAPI's `{param}` form. */
export function methodOperation(name: string, def: MethodDef): { path: string; verb: string; operation: Json } {
  const { verb: upper, path } = splitRoute(def.http)
  const verb = upper.toLowerCase()
  const surface = surfaceOf(path)
  const style = styleOf(def, surface, path)
  const { parameters, requestBody } = inputParts(name, def, verb)
  const operation: Json = {
    operationId: name,
    summary: def.summary,
    tags: [surface],
    security: securityOf(surface),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: { '200': successResponse(name, def), ...errorResponses(def, surface, style, verb) },
    'x-tandem-error-style': style,
    ...(def.limit ? { 'x-tandem-rate-limit': def.limit } : {}),
    ...(def.httpOnly ? { 'x-tandem-http-only': true } : {}),
    ...(allowsAnyOrigin(surface) ? { 'x-tandem-cors': 'any origin, without credentials' } : {}),
  }
  return { path: path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}'), verb, operation }
}

const RETRY_AFTER: Json = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
}

/** The answers of a relayed route: 200 with each content type, its errors, and the upstream's own. */
function relayResponses(def: RelayDef, style: ErrorStyle, id: string): Record<string, Json> {
  const content = Object.fromEntries(
    Object.entries(def.answer.content).map(([type, schema], i) => [
      type,
      { schema: jsonSchemaOf(schema, 'output', `urn:tandem:${id}:answer${i}`) },
    ]),
  )
  const out: Record<string, Json> = { '200': { description: def.answer.why, content } }
  for (const [status, e] of Object.entries(def.errors) as [string, RelayError][])
    out[status] = {
      description: e.why,
      ...(e.retryAfter ? { headers: RETRY_AFTER } : {}),
      content: { 'application/json': { schema: errorRef(style) } },
    }
  if (def.upstreamErrors)
    out.default = {
      description: def.upstreamErrors.why,
      content: { 'application/json': { schema: def.upstreamErrors.shaped ? errorRef(style) : {} } },
    }
  return out
}

/**
 * One relayed route (contract/relays.ts) as an OpenAPI operation. Its body schema is open
 * (`additionalProperties: true`): members it does not list are forwarded or ignored, never refused.
 */
export function relayOperation(route: HttpRoute, def: RelayDef): { path: string; verb: string; operation: Json } {
  const { verb: upper, path } = splitRoute(route)
  const surface = surfaceOf(path)
  const style = surfaceStyle(surface, path)
  let requestBody: Json | undefined
  if (def.body) {
    const schema = { ...jsonSchemaOf(def.body.schema, 'input', `urn:tandem:${def.operationId}:body`) }
    schema.additionalProperties = true
    requestBody = { required: true, content: { [def.body.type]: { schema } } }
  }
  const operation: Json = {
    operationId: def.operationId,
    summary: def.summary,
    description: def.description,
    tags: [surface],
    security: securityOf(surface),
    ...(requestBody ? { requestBody } : {}),
    responses: relayResponses(def, style, def.operationId),
    'x-tandem-error-style': style,
    'x-tandem-http-only': true,
    ...(allowsAnyOrigin(surface) ? { 'x-tandem-cors': 'any origin, without credentials' } : {}),
  }
  return { path, verb: upper.toLowerCase(), operation }
}

const RELAYS_NOTE =
  'The gateway relays (chat, completions, embeddings, audio) forward request bodies verbatim to their upstream, ' +
  'so their body schemas list the required members and allow any other.'

const DESCRIPTION: Record<OpenApiAudience, string> = {
  public:
    'The public surfaces of Tandem: the licensing buyer API (wire-compatible with the Keysat client SDKs; open, ' +
    'rate-limited per client address) and the consumer gateway (open on the LAN, or a CONSUMER_API_KEYS bearer key). ' +
    'Errors: licensing endpoints answer `{ok: false, error, message}`, `/v1/validate` always answers 200 with ' +
    '`{ok: false, reason}` on refusal, and the OpenAI-shaped gateway routes answer `{error: {message, type, code, param}, detail}`. ' +
    RELAYS_NOTE,
  full:
    'Every method of Tandem, as served over HTTP (and, unless marked x-tandem-http-only, over IPC to the desktop window). ' +
    'Control API and licensing admin need the admin session cookie or the admin token as a bearer and answer errors ' +
    'as `{detail, code}`; licensing public endpoints answer `{ok: false, error, message}` (`/v1/validate` always 200); ' +
    'the OpenAI-shaped gateway routes answer `{error: {message, type, code, param}, detail}`. ' +
    RELAYS_NOTE,
}

/** The document for an audience; a method whose operation cannot be built is left out, never the whole document. */
export function openApiDocument(table: ContractTable, opts: OpenApiOptions): OpenApiDocument {
  const paths: Record<string, Record<string, Json>> = {}
  for (const [name, def] of Object.entries(table)) {
    if (opts.audience === 'public' && !PUBLIC_SURFACES.has(surfaceOf(splitRoute(def.http).path))) continue
    let op: ReturnType<typeof methodOperation>
    try {
      op = methodOperation(name, def)
    } catch {
      continue
    }
    paths[op.path] = { ...paths[op.path], [op.verb]: op.operation }
  }
  // The gateway's relays are consumer routes: in both documents.
  for (const [route, def] of Object.entries(gatewayRelays) as [HttpRoute, RelayDef][]) {
    const op = relayOperation(route, def)
    paths[op.path] = { ...paths[op.path], [op.verb]: op.operation }
  }
  const schemes: Json = {
    consumerBearer: { type: 'http', scheme: 'bearer', description: 'A CONSUMER_API_KEYS key, when any is set.' },
  }
  if (opts.audience === 'full') {
    schemes.adminBearer = { type: 'http', scheme: 'bearer', description: 'The admin token.' }
    schemes.adminSession = {
      type: 'apiKey',
      in: 'cookie',
      name: SESSION_COOKIE,
      description: 'The session cookie POST /api/login sets.',
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: opts.audience === 'public' ? 'Tandem public API' : 'Tandem API',
      version: opts.version,
      description: DESCRIPTION[opts.audience],
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(errorSchemas).map(([k, v]) => [errorSchemaName[k as ErrorStyle], v])),
      securitySchemes: schemes,
    },
  }
}
