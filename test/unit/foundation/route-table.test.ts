import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { method } from '../../../src-main/contract/define'
import { RouteTable } from '../../../src-main/http/routeTable'

const table = new RouteTable({
  list: method({ summary: '', http: 'GET /api/models', input: z.object({}), output: z.object({}) }),
  knobs: method({
    summary: '',
    http: 'PUT /api/models/:key/knobs',
    input: z.object({ key: z.string() }),
    output: z.object({}),
  }),
  del: method({
    summary: '',
    http: 'DELETE /api/models/:key',
    input: z.object({ key: z.string() }),
    output: z.object({}),
  }),
  dotted: method({ summary: '', http: 'GET /v1/a.b/:x', input: z.object({ x: z.string() }), output: z.object({}) }),
})

describe('route table', () => {
  it('matches fixed paths, parameters and HEAD as GET', () => {
    expect(table.match('GET', '/api/models')?.entry.name).toBe('list')
    expect(table.match('HEAD', '/api/models')?.entry.name).toBe('list')
    expect(table.match('PUT', '/api/models/qwen%2F3/knobs')).toMatchObject({
      entry: { name: 'knobs' },
      params: { key: 'qwen/3' },
    })
    expect(table.match('DELETE', '/api/models/x')?.entry.name).toBe('del')
  })

  it('does not match another verb, extra segments, or regex-special characters loosely', () => {
    expect(table.match('POST', '/api/models')).toBeNull()
    expect(table.match('DELETE', '/api/models/x/y')).toBeNull()
    expect(table.match('GET', '/v1/aXb/1')).toBeNull()
    expect(table.match('GET', '/v1/a.b/1')?.params).toEqual({ x: '1' })
  })

  it('refuses malformed percent-encoding in a parameter with a 400', () => {
    expect(() => table.match('DELETE', '/api/models/%E0%A4%A')).toThrow(/percent-encoding/)
  })
})
