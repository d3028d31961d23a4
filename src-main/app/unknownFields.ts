import type { z } from 'zod'
import { splitRoute, type MethodDef } from '../contract/define'

/**
 * Finds input fields a schema does not declare, by walking the schema's object shapes alongside
 * the value (nested objects and arrays of objects too). Generic over every method, so nothing
 * per schema has to be made strict by hand.
 */

interface SchemaDef {
  readonly type: string
  readonly shape?: Record<string, z.ZodType>
  readonly catchall?: z.ZodType
  readonly in?: z.ZodType
  readonly innerType?: z.ZodType
  readonly options?: readonly z.ZodType[]
  readonly left?: z.ZodType
  readonly right?: z.ZodType
  readonly element?: z.ZodType
}

const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional'])

/** The object shapes a value may be checked against, through wrappers, pipes, unions and intersections. */
function shapesOf(schema: z.ZodType): SchemaDef[] | null {
  const def = defOf(schema)
  if (def.type === 'object') return def.catchall && defOf(def.catchall).type !== 'never' ? null : [def]
  if (WRAPPERS.has(def.type) && def.innerType) return shapesOf(def.innerType)
  if (def.type === 'pipe' && def.in) return shapesOf(def.in)
  const parts =
    def.type === 'union'
      ? def.options
      : def.type === 'intersection' && def.left && def.right
        ? [def.left, def.right]
        : null
  if (!parts) return null
  const all: SchemaDef[] = []
  for (const part of parts) {
    const shapes = shapesOf(part)
    if (!shapes) return null // an open alternative accepts anything
    all.push(...shapes)
  }
  return all
}

function elementOf(schema: z.ZodType): z.ZodType | null {
  const def = defOf(schema)
  if (def.type === 'array' && def.element) return def.element
  if (WRAPPERS.has(def.type) && def.innerType) return elementOf(def.innerType)
  if (def.type === 'pipe' && def.in) return elementOf(def.in)
  return null
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)

/** Dotted paths of the fields in `value` that `schema` does not declare. */
export function unknownFields(schema: z.ZodType, value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) {
    const element = elementOf(schema)
    if (!element) return []
    return value.flatMap((item, i) => unknownFields(element, item, `${prefix}${i}.`))
  }
  if (!isPlainObject(value)) return []
  const shapes = shapesOf(schema)
  if (!shapes) return []
  const found: string[] = []
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue
    const owners = shapes.filter((s) => s.shape && Object.hasOwn(s.shape, key))
    if (owners.length === 0) {
      found.push(`${prefix}${key}`)
      continue
    }
    // Only a field with one declared meaning is walked into; alternatives are left to the schema.
    if (owners.length === 1) found.push(...unknownFields(owners[0]!.shape![key]!, v, `${prefix}${key}.`))
  }
  return found
}

const strictOf = new WeakMap<MethodDef, boolean>()

/** Whether a method refuses undeclared fields: its own flag, else on for the licensing admin API. */
export function refusesUnknownFields(def: MethodDef): boolean {
  let strict = strictOf.get(def)
  if (strict === undefined) {
    strict = def.strictFields ?? splitRoute(def.http).path.startsWith('/v1/admin/')
    strictOf.set(def, strict)
  }
  return strict
}
