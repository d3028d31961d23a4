import { Validator } from '@seriousme/openapi-schema-validator'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { contract } from '../../../src-main/contract'
import { method, splitRoute, type ContractTable, type MethodDef } from '../../../src-main/contract/define'
import { methodOperation, openApiDocument } from '../../../src-main/system/openapi'
import { gatewayRelays } from '../../../src-main/contract/relays'
import { surfaceOf } from '../../../src-main/http/surfaces'

const table = contract as ContractTable
type Op = Record<string, unknown> & { responses: Record<string, unknown> }
const op = (doc: { paths: Record<string, Record<string, unknown>> }, path: string, verb: string) =>
  doc.paths[path]?.[verb] as Op | undefined

async function expectValid(doc: Record<string, unknown>): Promise<void> {
  const v = new Validator()
  const res = await v.validate(doc)
  expect(res.errors ?? null).toBeNull()
  expect(res.valid).toBe(true)
  expect(v.version).toBe('3.1')
}

describe('OpenAPI document', () => {
  it('builds an operation for every method of the contract table without throwing', () => {
    const names = Object.keys(table)
    expect(names.length).toBeGreaterThan(50)
    for (const name of names) {
      const def = table[name] as MethodDef
      const o = methodOperation(name, def)
      expect(o.operation.operationId, name).toBe(name)
      expect(Object.keys(o.operation.responses as object), name).toContain('200')
    }
  })

  it('documents every method once, by route, in a valid OpenAPI 3.1 document', async () => {
    const doc = openApiDocument(table, { audience: 'full', version: '1.2.3:0', serverUrl: 'https://shop.example' })
    await expectValid(doc)
    const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => (o as Op).operationId))
    expect(new Set(ids).size).toBe(ids.length)
    // Every method, and beside them the gateway's relays (openapiRelays.test.ts).
    const relayIds = Object.values(gatewayRelays).map((r) => r.operationId)
    expect([...ids].sort()).toEqual([...Object.keys(table), ...relayIds].sort())
    expect(doc.servers).toEqual([{ url: 'https://shop.example' }])
  })

  it('the public document has only the licensing public and consumer methods, and is valid', async () => {
    const doc = openApiDocument(table, { audience: 'public', version: '1.2.3:0' })
    await expectValid(doc)
    const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => (o as Op).operationId as string))
    expect(ids).toContain('licValidate')
    expect(ids).toContain('openapiPublic')
    expect(ids).not.toContain('licAdminProducts')
    expect(ids).not.toContain('openapiFull')
    for (const id of ids.filter((i) => i in table)) {
      const surface = surfaceOf(splitRoute((table[id] as MethodDef).http).path)
      expect(['licensing-public', 'consumer'], id).toContain(surface)
    }
    expect(JSON.stringify(doc)).not.toContain('adminBearer')
  })

  it('gives each method its route, inputs, answer and error shape', () => {
    const doc = openApiDocument(table, { audience: 'full', version: '0' })
    // /v1/validate: a JSON body with the key required; always 200, so no 400 or 429.
    const validate = op(doc, '/v1/validate', 'post')!
    expect(validate.security).toEqual([])
    expect(validate.requestBody).toMatchObject({
      required: true,
      content: { 'application/json': { schema: { type: 'object', required: ['key'] } } },
    })
    expect(Object.keys(validate.responses).sort()).toEqual(['200', 'default'])
    expect(validate['x-tandem-error-style']).toBe('licensing')
    // A buyer method with a limit: licensing error shape, 400 and 429.
    const activate = op(doc, '/v1/machines/activate', 'post')!
    expect(activate.responses['429']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/LicensingError' } } },
    })
    // An admin GET with a path parameter: path parameter, 401 and 404 in the control shape, no origin-guard 403.
    const product = op(doc, '/v1/admin/products/{id}', 'get')!
    expect(product.parameters).toEqual([{ name: 'id', in: 'path', required: true, schema: expect.any(Object) }])
    expect(product.responses['404']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ControlError' } } },
    })
    expect(product.responses['401']).toBeDefined()
    expect(product.responses['403']).toBeUndefined()
    expect(product.security).toEqual([{ adminBearer: [] }, { adminSession: [] }])
    // A GET's input is its query; a state-changing admin call can meet the origin guard.
    const validations = op(doc, '/v1/admin/validations', 'get')!
    expect((validations.parameters as { name: string; in: string }[]).map((p) => `${p.in}:${p.name}`)).toEqual([
      'query:license_id',
      'query:kind',
      'query:ok',
      'query:limit',
      'query:before_id',
    ])
    expect(op(doc, '/v1/admin/licenses/{id}/revoke', 'post')!.responses['403']).toBeDefined()
    // The output schema is the method's output as zod describes it.
    expect(op(doc, '/v1/pubkey', 'get')!.responses['200']).toMatchObject({
      content: {
        'application/json': { schema: { type: 'object', properties: { public_key_pem: { type: 'string' } } } },
      },
    })
    expect(Object.keys((doc.components as { schemas: object }).schemas).sort()).toEqual([
      'ControlError',
      'LicensingError',
      'OpenAIError',
    ])
  })

  it('documents unrepresentable types as {} rather than fail, and stays valid', async () => {
    interface Tree {
      name: string
      children: Tree[]
    }
    const Tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(Tree) }))
    const odd = {
      oddDate: method({
        summary: 'dates and bigints',
        http: 'POST /api/odd/:id',
        input: z.object({ id: z.string(), when: z.date(), big: z.bigint(), any: z.custom<Buffer>() }),
        output: z.object({ n: z.string().transform((s) => s.length), m: z.map(z.string(), z.number()) }),
      }),
      oddTree: method({
        summary: 'a recursive schema',
        http: 'GET /api/odd-tree',
        input: z.preprocess((v) => v, z.object({ q: z.string().optional() })),
        output: Tree,
      }),
      oddSymbol: method({ summary: 'symbols', http: 'GET /api/odd-symbol', input: z.object({}), output: z.symbol() }),
    } satisfies ContractTable
    const doc = openApiDocument(odd, { audience: 'full', version: '0' })
    await expectValid(doc)
    type Body = { content: Record<string, { schema: { properties: Record<string, unknown> } }> }
    const body = (op(doc, '/api/odd/{id}', 'post')!.requestBody as Body).content['application/json']!.schema
    expect(body.properties.when).toEqual({})
    expect(body.properties.any).toEqual({})
    expect(Object.keys(body.properties)).not.toContain('id')
    const tree = (op(doc, '/api/odd-tree', 'get')!.responses['200'] as { content: Record<string, { schema: Op }> })
      .content['application/json']!.schema
    // A recursive schema refers to itself inside its own $id, not to the document's root.
    expect(tree.$id).toBe('urn:tandem:oddTree:output')
    expect(op(doc, '/api/odd-symbol', 'get')!.responses['200']).toMatchObject({
      content: { 'application/json': { schema: {} } },
    })
  })
})
