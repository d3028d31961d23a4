import { describe, expect, it } from 'vitest'
import { allowsAnyOrigin, isOriginGuarded, quotaSpentBy, surfaceOf } from '../../../src-main/http/surfaces'

describe('surfaces', () => {
  it.each([
    ['/', 'dashboard'],
    ['/assets/index-abc.js', 'dashboard'],
    ['/api/login', 'login'],
    ['/api/health', 'login'],
    ['/api/config', 'control'],
    ['/api/models', 'control'],
    ['/api/node/node1/wake', 'control'],
    ['/api/jobs/x/stream', 'control'],
    ['/v1/chat/completions', 'consumer'],
    ['/v1/audio/speech', 'consumer'],
    ['/api/audio/transcribe-with-speakers', 'consumer'],
    ['/api/health-event', 'consumer'],
    ['/api/endpoints', 'consumer'],
    ['/scrub', 'consumer'],
    ['/api/search', 'consumer'],
    ['/v1/validate', 'licensing-public'],
    ['/v1/machines/activate', 'licensing-public'],
    ['/v1/products/app/policies', 'licensing-public'],
    ['/buy/app', 'licensing-public'],
    ['/v1/btcpay/webhook', 'webhook'],
    ['/v1/provider_b/webhook', 'webhook'],
    ['/v1/btcpay/webhook/0b5e6d2a-provider', 'webhook'],
    ['/v1/zaprite/webhook/p1', 'webhook'],
    ['/healthz', 'licensing-public'],
    ['/v1/issuer/public-key', 'licensing-public'],
    ['/v1/admin/products', 'licensing-admin'],
    ['/v1/something-new', 'control'],
  ])('%s is %s', (path, surface) => {
    expect(surfaceOf(path)).toBe(surface)
  })

  it('guards only what a session cookie can reach, and opens CORS only for public surfaces', () => {
    expect(isOriginGuarded('control')).toBe(true)
    expect(isOriginGuarded('licensing-admin')).toBe(true)
    expect(isOriginGuarded('consumer')).toBe(false)
    expect(isOriginGuarded('webhook')).toBe(false)
    expect(allowsAnyOrigin('consumer')).toBe(true)
    expect(allowsAnyOrigin('control')).toBe(false)
  })

  it.each([
    ['/v1/audio/transcriptions', 'audio'],
    ['/v1/audio/speech', 'audio'],
    ['/api/audio/diarize-chunk', 'audio'],
    ['/api/audio/transcribe-with-speakers', 'audio'],
    ['/v1/chat/completions', 'tokens'],
    ['/v1/embeddings', 'tokens'],
    ['/v1/usage', null],
    ['/v1/models', null],
  ])("%s spends a license key's %s allowance", (path, quota) => {
    expect(quotaSpentBy(path)).toBe(quota)
  })
})
