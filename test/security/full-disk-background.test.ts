import http from 'node:http'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { FakeBtcpay } from '../fakes/btcpay'
import { FakeRateSources } from '../fakes/rates'
import { startRig, type GatewayRig } from '../integration/gateway/setup'
import { tmpfsVolume } from './tmpfsVolume'

/**
 * Issue 42, item 4, past the contract methods: the SQLite writes no contract call makes. On a full
 * DATA_DIR (a real 20 MB tmpfs, tmpfsVolume.ts) a consumer key's usage flush threw from its timer
 * (the daemon has no handler for that: it would exit), a webhook delivery whose result could not be
 * recorded was posted again every 5 s, and a provider's payment webhook was answered 500 "webhook
 * handling failed". Now: background writes keep what they could not write, say so once per outage
 * and catch up when there is room; a request answers 507 naming what could not be saved.
 */
const volume = tmpfsVolume()
const FLUSH_S = 5 // the usage store's and the webhook worker's interval

let rig: GatewayRig
let btcpay: FakeBtcpay
let rates: FakeRateSources

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const linesWith = (text: string): string[] => rig.daemon.logs.lines.filter((l) => l.includes(text))

beforeAll(async () => {
  if (!volume.mounted) return
  btcpay = await new FakeBtcpay().start()
  rates = await new FakeRateSources().start()
  rig = await startRig({ ...rates.env, LICENSING_RATE_LIMIT: '0', MONITOR_INTERVAL_S: '0' }, { dataDir: volume.root })
  btcpay.webhookUrl = `${rig.daemon.url}/v1/btcpay/webhook`
})
// Room again after each case, whatever it asserted.
afterEach(() => volume.free())
afterAll(async () => {
  await rig?.stop()
  await Promise.all([btcpay?.stop(), rates?.stop()])
  volume.remove()
})

describe.skipIf(!volume.mounted)(
  'background SQLite writes on a full DATA_DIR (issue 42, needs root)',
  { timeout: 120_000 },
  () => {
    it("keeps a key's usage while the disk is full, logs it once, and writes it when there is room", async () => {
      const created = await rig.daemon.admin('/api/consumer-keys', {
        method: 'POST',
        body: JSON.stringify({ name: 'metered' }),
      })
      expect(created.status).toBe(200)
      const { id, secret } = (await created.json()) as { id: string; secret: string }
      const chat = (): Promise<number> =>
        fetch(`${rig.daemon.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
          body: JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hi' }] }),
        }).then(async (r) => (await r.arrayBuffer(), r.status))
      volume.fill()
      // Chat is served all the same: usage is written behind it.
      for (let i = 0; i < 4; i++) expect(await chat()).toBe(200)
      // A read of the usage flushes first: it answers what is written, not a 507 for the flush.
      const during = await rig.daemon.admin(`/api/consumer-keys/usage?key_id=${id}`)
      expect(during.status).toBe(200)
      await wait((2 * FLUSH_S + 1) * 1000) // two more flushes from the timer, each refused
      expect(linesWith('consumer key usage: no space left for the database')).toHaveLength(1)
      volume.free()
      const after = await rig.daemon.admin(`/api/consumer-keys/usage?key_id=${id}`)
      expect(after.status).toBe(200)
      const { totals } = (await after.json()) as { totals: { key_id: string; requests: number }[] }
      expect(totals.find((t) => t.key_id === id)?.requests).toBe(4)
      expect(linesWith('consumer key usage is written again')).toHaveLength(1)
    })

    it('posts a webhook delivery once when its result cannot be recorded, and records it when there is room', async () => {
      const posts: string[] = []
      let answer: (() => void) | null = null
      const held = new Promise<void>((r) => (answer = r))
      const receiver = http.createServer((req, res) => {
        posts.push(String(req.headers['x-tandem-delivery']))
        req.resume()
        void held.then(() => res.end('ok'))
      })
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
      try {
        const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/in`
        const ep = await rig.daemon.admin('/v1/admin/webhook-endpoints', {
          method: 'POST',
          body: JSON.stringify({ url, secret: 'tandem-outbound-secret-0123', events: ['*'] }),
        })
        expect(ep.status).toBe(200)
        const endpoint = (await ep.json()) as { id: string }
        const sent = await rig.daemon.admin(`/v1/admin/webhook-endpoints/${endpoint.id}/test`, { method: 'POST' })
        expect(sent.status).toBe(200)
        const delivery = (await sent.json()) as { id: string }
        for (let i = 0; i < 100 && posts.length === 0; i++) await wait(50)
        expect(posts).toEqual([delivery.id])
        // The endpoint has the delivery; its 200 comes back to a full disk.
        volume.fill()
        answer!()
        await wait((2 * FLUSH_S + 1) * 1000)
        expect(posts).toEqual([delivery.id])
        expect(linesWith('webhook delivery results: no space left for the database')).toHaveLength(1)
        volume.free()
        await wait((FLUSH_S + 1) * 1000)
        const shown = (await (
          await rig.daemon.admin(`/v1/admin/webhook-deliveries?endpoint_id=${endpoint.id}`)
        ).json()) as {
          id: string
          status: string
        }[]
        expect(shown.find((x) => x.id === delivery.id)?.status).toBe('delivered')
        expect(posts).toEqual([delivery.id])
      } finally {
        receiver.close()
      }
    })

    it("answers a provider's payment webhook 507 naming what could not be recorded, and settles it when sent again", async () => {
      const product = await rig.daemon.admin('/v1/admin/products', {
        method: 'POST',
        body: JSON.stringify({ slug: 'notes', name: 'Notes', price_currency: 'SAT', price_value: 50_000 }),
      })
      expect(product.status).toBe(200)
      const conn = await rig.daemon.admin('/v1/admin/btcpay/connect', {
        method: 'POST',
        body: JSON.stringify({
          base_url: btcpay.url,
          store_id: btcpay.storeId,
          api_key: btcpay.apiKey,
          webhook_secret: btcpay.webhookSecret,
        }),
      })
      expect(conn.status).toBe(200)
      const bought = await fetch(`${rig.daemon.url}/v1/purchase`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ product: 'notes' }),
      })
      expect(bought.status).toBe(200)
      const p = (await bought.json()) as { invoice_id: string; provider_invoice_id: string }
      volume.fill()
      const refused = await btcpay.pay(p.provider_invoice_id)
      expect(refused.status).toBe(507)
      expect(refused.text).toMatch(/no space left .*could not record the btcpay payment webhook/)
      volume.free()
      expect((await btcpay.pay(p.provider_invoice_id)).status).toBe(200)
      const poll = (await (await fetch(`${rig.daemon.url}/v1/purchase/${p.invoice_id}`)).json()) as { status: string }
      expect(poll.status).toBe('settled')
    })
  },
)
