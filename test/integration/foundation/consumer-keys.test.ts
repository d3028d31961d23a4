import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

let d: TestDaemon
beforeAll(async () => {
  d = await startDaemon({
    env: { CONSUMER_API_KEYS: 'lan-key-one-123456, lan-key-two-654321', ADMIN_TOKEN: 'fixed-admin-token-for-tests' },
  })
})
afterAll(() => d.stop())

describe('consumer API keys', () => {
  it('uses ADMIN_TOKEN when set instead of generating one', () => {
    expect(d.adminToken).toBe('fixed-admin-token-for-tests')
  })

  it('requires one of the keys on consumer paths once keys are set', async () => {
    const none = await fetch(`${d.url}/api/endpoints`)
    expect(none.status).toBe(401)
    const wrong = await fetch(`${d.url}/api/endpoints`, { headers: { Authorization: 'Bearer lan-key-three-000000' } })
    expect(wrong.status).toBe(401)
    expect(await wrong.json()).toMatchObject({ code: 'unauthorized' })
  })

  it('lets a listed key through the auth layer', async () => {
    const res = await fetch(`${d.url}/api/endpoints`, { headers: { Authorization: 'Bearer lan-key-two-654321' } })
    expect(res.status).not.toBe(401)
  })

  it('keeps consumer keys away from the control API', async () => {
    const res = await fetch(`${d.url}/api/config`, { headers: { Authorization: 'Bearer lan-key-one-123456' } })
    expect(res.status).toBe(401)
  })
})
