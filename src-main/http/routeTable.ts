import { contract } from '../contract'
import { splitRoute, type HttpRoute, type HttpVerb, type MethodDef } from '../contract/define'
import { ApiError } from '../contract/errors'

export interface RouteEntry {
  readonly name: string
  readonly def: MethodDef
  readonly verb: HttpVerb
}

interface ParamRoute extends RouteEntry {
  readonly pattern: RegExp
  readonly params: readonly string[]
}

export interface RouteMatch {
  readonly entry: RouteEntry
  readonly params: Record<string, string>
}

/**
 * The contract's routes compiled once: fixed paths in a map, parameterised ones as anchored
 * patterns. One lookup per request instead of walking every route in turn.
 */
export class RouteTable {
  private readonly fixed = new Map<string, RouteEntry>()
  private readonly withParams: ParamRoute[] = []

  constructor(table: Record<string, MethodDef>) {
    for (const [name, def] of Object.entries(table)) {
      for (const route of [def.http, ...(def.aliases ?? [])]) this.add(name, def, route)
    }
  }

  private add(name: string, def: MethodDef, route: HttpRoute): void {
    const { verb, path } = splitRoute(route)
    const params = [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string)
    if (params.length === 0) {
      this.fixed.set(`${verb} ${path}`, { name, def, verb })
      return
    }
    const source = path
      .split('/')
      .map((seg) => (seg.startsWith(':') ? '([^/]+)' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/')
    this.withParams.push({ name, def, verb, params, pattern: new RegExp(`^${source}$`) })
  }

  /** The routes of one verb that take no parameters, as [path, entry]. */
  *fixedRoutes(verb: HttpVerb): IterableIterator<[string, RouteEntry]> {
    const prefix = `${verb} `
    for (const [key, entry] of this.fixed) if (key.startsWith(prefix)) yield [key.slice(prefix.length), entry]
  }

  match(method: string, path: string): RouteMatch | null {
    const verb = method === 'HEAD' ? 'GET' : method
    const fixed = this.fixed.get(`${verb} ${path}`)
    if (fixed) return { entry: fixed, params: {} }
    for (const r of this.withParams) {
      if (r.verb !== verb) continue
      const m = r.pattern.exec(path)
      if (!m) continue
      const params: Record<string, string> = {}
      r.params.forEach((p, i) => {
        try {
          params[p] = decodeURIComponent(m[i + 1] as string)
        } catch {
          throw new ApiError('not_found', `no such ${p}: not valid percent-encoding`)
        }
      })
      return { entry: r, params }
    }
    return null
  }
}

let compiled: RouteTable | undefined

/** The contract's route table, compiled on first use: the contract does not change while Tandem runs. */
export function contractRouteTable(): RouteTable {
  return (compiled ??= new RouteTable(contract as Record<string, MethodDef>))
}
