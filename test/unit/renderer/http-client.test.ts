// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest'
import { routes } from 'virtual:contract-data'
import { contract } from '../../../src-main/contract'
import { splitRoute } from '../../../src-main/contract/define'
import { buildRequest } from '../../../src-renderer/api/httpApi'

describe('renderer HTTP client', () => {
  it('puts GET inputs in the query string and path params in the path', () => {
    expect(buildRequest(routes.listJobs, { kind: 'download' })).toEqual({
      verb: 'GET',
      path: '/api/jobs?kind=download',
    })
    expect(buildRequest(routes.streamJob, { id: 'a/b', after: 3 })).toEqual({
      verb: 'GET',
      path: '/api/jobs/a%2Fb/stream?after=3',
    })
  })

  it('sends the rest of a POST/PUT input as a JSON body', () => {
    expect(buildRequest(routes.saveSettings, { values: { PORT: '1' } })).toEqual({
      verb: 'PUT',
      path: '/api/settings',
      body: '{"values":{"PORT":"1"}}',
    })
    expect(buildRequest(routes.cancelJob, { id: 'x' })).toEqual({
      verb: 'POST',
      path: '/api/jobs/x/cancel',
      body: '{}',
    })
  })

  it("takes every method's verb and path from the build's contract data", () => {
    expect(Object.keys(routes)).toEqual(Object.keys(contract))
    for (const [name, def] of Object.entries(contract)) {
      const { verb, path } = splitRoute(def.http)
      expect([name, ...routes[name as keyof typeof routes]]).toEqual([name, verb, path])
    }
  })
})
