import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

let d: TestDaemon
beforeAll(async () => {
  d = await startDaemon()
})
afterAll(async () => {
  await d?.stop()
})

describe('OpenAPI over HTTP', () => {
  it('serves the public document to anyone, with CORS, documenting no admin method', async () => {
    const res = await fetch(`${d.url}/v1/openapi.json`, { headers: { Origin: 'https://app.example' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> }
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths)).toContain('/v1/validate')
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/v1/admin/') || p.startsWith('/api/jobs'))).toBe(false)
  })

  it('serves the full document only to the admin', async () => {
    expect((await fetch(`${d.url}/api/openapi.json`)).status).toBe(401)
    const res = await d.admin('/api/openapi.json')
    expect(res.status).toBe(200)
    const doc = (await res.json()) as { paths: Record<string, Record<string, { operationId: string }>> }
    expect(doc.paths['/v1/admin/validations']?.get?.operationId).toBe('licAdminValidations')
    expect(doc.paths['/api/openapi.json']?.get?.operationId).toBe('openapiFull')
  })
})
