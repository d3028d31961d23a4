import http from 'node:http'
import type { z } from 'zod'
import { contract } from '../../src-main/contract'
import { splitRoute, type HttpVerb, type MethodDef } from '../../src-main/contract/define'
import { surfaceOf, type Surface } from '../../src-main/http/surfaces'

/** One contract route (a method's main path or an alias) with its path parameters filled in. */
export interface ContractRoute {
  readonly name: string
  readonly verb: HttpVerb
  /** The route as the contract writes it, e.g. `/api/jobs/:id`. */
  readonly pattern: string
  /** The path to call: every parameter filled with a value its schema accepts. */
  readonly url: string
  readonly surface: Surface
  readonly stream: boolean
}

/** Values tried for a path parameter, in order; the first the method's schema accepts is used. */
const PARAM_CANDIDATES = [
  'node1',
  'asr',
  'restart',
  'activate',
  'btcpay',
  'qwen3-32b-fp8',
  '0123456789abcdef',
  '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e',
  'security-dummy-1',
]

function paramValue(def: MethodDef, param: string): string {
  const shape = (def.input as { shape?: Record<string, z.ZodType> }).shape
  const schema = shape?.[param]
  if (!schema) return PARAM_CANDIDATES.at(-1) as string
  return PARAM_CANDIDATES.find((c) => schema.safeParse(c).success) ?? (PARAM_CANDIDATES.at(-1) as string)
}

/** Every route the contract mounts over HTTP (main routes and aliases), generated from the contract itself. */
export function contractRoutes(): ContractRoute[] {
  const out: ContractRoute[] = []
  for (const [name, def] of Object.entries(contract as Record<string, MethodDef>))
    for (const route of [def.http, ...(def.aliases ?? [])]) {
      const { verb, path } = splitRoute(route)
      const url = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_m, p: string) => encodeURIComponent(paramValue(def, p)))
      out.push({ name, verb, pattern: path, url, surface: surfaceOf(url), stream: def.stream === true })
    }
  return out
}

/** Surfaces that need the admin session or token. */
export const ADMIN_SURFACES: ReadonlySet<Surface> = new Set<Surface>(['control', 'licensing-admin'])

/** What came back from one raw request: its status, or the socket error when there was none. */
export interface RawReply {
  readonly status: number | null
  readonly body: string
  readonly error?: string
}

/**
 * One request with the path sent exactly as written (fetch and URL would normalise `..`, `%2e`
 * and case); streams are cut after the first chunk so an SSE route cannot hold the test.
 */
export function rawRequest(
  base: string,
  verb: string,
  rawPath: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawReply> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve) => {
    const req = http.request(
      { host: hostname, port, method: verb, path: rawPath, agent: false, headers: { ...headers } },
      (res) => {
        const chunks: Buffer[] = []
        const done = (): void =>
          resolve({ status: res.statusCode ?? null, body: Buffer.concat(chunks).toString('utf8') })
        if (/event-stream/.test(String(res.headers['content-type']))) {
          done()
          req.destroy()
          return
        }
        res.on('data', (b: Buffer) => chunks.push(b))
        res.on('end', done)
        res.on('error', done)
        res.on('close', done)
      },
    )
    req.setTimeout(20_000, () => req.destroy(new Error('timed out')))
    req.on('error', (err) => resolve({ status: null, body: '', error: err.message }))
    req.end(body)
  })
}

/** A distinct client address per call (the daemon believes X-Forwarded-For from 127.0.0.1 in these suites). */
export function clientAddresses(): () => string {
  let n = 0
  return () => {
    n++
    return `198.18.${(n >> 8) & 255}.${n & 255}`
  }
}
