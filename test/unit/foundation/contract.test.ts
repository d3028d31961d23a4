import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { contract } from '../../../src-main/contract'
import { routeParams, splitRoute, type MethodDef } from '../../../src-main/contract/define'
import { surfaceOf } from '../../../src-main/http/surfaces'

const entries = Object.entries(contract) as [string, MethodDef][]

describe('the contract table', () => {
  it('gives every method a unique verb and path', () => {
    const seen = new Map<string, string>()
    for (const [name, def] of entries) {
      const key = def.http.replace(/:[A-Za-z_]+/g, ':p')
      expect(seen.get(key), `${name} collides with ${seen.get(key)}`).toBeUndefined()
      seen.set(key, name)
    }
  })

  it('declares every path parameter in the input schema', () => {
    for (const [name, def] of entries) {
      const shape = (def.input as z.ZodObject).shape as Record<string, unknown>
      for (const p of routeParams(def.http)) expect(shape[p], `${name} lacks input field ${p}`).toBeDefined()
    }
  })

  it('uses object inputs so HTTP can merge params, query and body', () => {
    // An object, or an object refined and transformed (the buyer key alias): both take one merged object.
    const objectIn = (s: z.ZodType): boolean =>
      s instanceof z.ZodObject || (s instanceof z.ZodPipe && objectIn(s.in as z.ZodType))
    for (const [name, def] of entries) expect(objectIn(def.input), name).toBe(true)
  })

  it('keeps licensing-style errors on licensing public paths only', () => {
    for (const [name, def] of entries) {
      if (def.errorStyle !== 'licensing') continue
      const { path } = splitRoute(def.http)
      expect(surfaceOf(path.replace(/:[A-Za-z_]+/g, 'x')), name).toBe('licensing-public')
    }
  })
})
