import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { DEMO_COLLECTION, startDemoVectors } from '../../sim/demoVectors'

// The demo's embeddings and vector-store wiring: both rows answer, and a search finds a note.
describe('demo embeddings and vector store', () => {
  let vectors: Awaited<ReturnType<typeof startDemoVectors>>
  let d: TestDaemon
  beforeAll(async () => {
    vectors = await startDemoVectors()
    d = await startDaemon({ env: vectors.env })
  })
  afterAll(async () => {
    await d?.stop()
    await vectors?.close()
  })

  it('serves search over the seeded collection through the gateway', async () => {
    const res = await fetch(`${d.url}/api/search`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ collection: DEMO_COLLECTION, query: 'licenses paid in bitcoin', limit: 2 }),
    })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { results: { payload: { text: string } }[] }
    expect(body.results).toHaveLength(2)
    expect(body.results[0]!.payload.text).toContain('bitcoin')
  })

  it('shows the embeddings and vector rows up', async () => {
    const res = (await (await d.admin('/api/gateway/upstreams')).json()) as {
      upstreams: { name: string; state: string }[]
    }
    const state = Object.fromEntries(res.upstreams.map((u) => [u.name, u.state]))
    expect(state).toMatchObject({ embeddings: 'up', vector: 'up' })
  })
})
