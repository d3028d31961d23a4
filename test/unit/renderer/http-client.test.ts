// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest'
import { contract } from '../../../src-main/contract'
import { buildRequest } from '../../../src-renderer/api/http'

describe('renderer HTTP client', () => {
  it('puts GET inputs in the query string and path params in the path', () => {
    expect(buildRequest(contract.listJobs, { kind: 'download' })).toEqual({
      verb: 'GET',
      path: '/api/jobs?kind=download',
    })
    expect(buildRequest(contract.streamJob, { id: 'a/b', after: 3 })).toEqual({
      verb: 'GET',
      path: '/api/jobs/a%2Fb/stream?after=3',
    })
  })

  it('sends the rest of a POST/PUT input as a JSON body', () => {
    expect(buildRequest(contract.saveSettings, { values: { PORT: '1' } })).toEqual({
      verb: 'PUT',
      path: '/api/settings',
      body: '{"values":{"PORT":"1"}}',
    })
    expect(buildRequest(contract.cancelJob, { id: 'x' })).toEqual({
      verb: 'POST',
      path: '/api/jobs/x/cancel',
      body: '{}',
    })
  })
})
