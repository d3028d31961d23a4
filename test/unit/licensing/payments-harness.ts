import fs from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../../../src-main/config/load'
import { PolicyInput, WebhookEndpointInput } from '../../../src-main/contract/licensing'
import type { z } from 'zod'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { testCoreDeps } from '../../helpers/coreDeps'
import { createPayments, type Payments, type PaymentsOptions } from '../../../src-main/licensing/payments'
import { createLicensingServices, type LicensingServices } from '../../../src-main/licensing/licensingServices'
import type { AccessKeys } from '../../../src-main/platform/accessKeys'
import type { FakeBtcpay } from '../../fakes/btcpay'

export interface Harness {
  clock: ManualClock
  logs: MemorySink
  services: LicensingServices
  payments: Payments
  dataDir: string
  close(): Promise<void>
}

/** Real licensing services and payments over a temp DATA_DIR, on a manual clock, without HTTP. */
export function paymentsHarness(
  opts: Partial<PaymentsOptions> & { env?: Record<string, string>; accessKeys?: AccessKeys } = {},
): Harness {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-pay-'))
  const config = loadConfig({
    env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', LICENSING_RATE_LIMIT: '0', ...opts.env },
  })
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const logs = new MemorySink()
  const logger = createLogger({ redactor: new Redactor(), sink: logs, level: 'debug', now: () => clock.now() })
  const services = createLicensingServices({ ...testCoreDeps({ config, clock, logger }), accessKeys: opts.accessKeys })
  const payments = createPayments(services, opts)
  return {
    clock,
    logs,
    services,
    payments,
    dataDir,
    async close() {
      await payments.stop()
      services.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** A SAT product with its default tier, ready to sell. */
export function satProduct(h: Harness, slug = 'app', price = 10_000): { productId: string; policyId: string } {
  const p = h.services.catalog.createProduct({
    slug,
    name: slug.toUpperCase(),
    description: '',
    price_currency: 'SAT',
    price_value: price,
    entitlements_catalog: [],
    active: true,
  })
  const policy = h.services.catalog.policyRows(p.id)[0]!
  return { productId: p.id, policyId: policy.id }
}

/** A tier on `productId` whose entitlement is its slug, priced `price` in the product's currency. */
export function tierOn(
  h: Harness,
  productId: string,
  t: { slug: string; rank: number | null; price: number },
  extra: Partial<z.input<typeof PolicyInput>> = {},
): string {
  const input = { slug: t.slug, name: t.slug, tier_rank: t.rank, price_value_override: t.price, entitlements: [t.slug] }
  return h.services.catalog.createPolicy(productId, PolicyInput.parse({ ...input, ...extra })).id
}

/** The payment routes (webhooks, buy pages) on a loopback Express app, as the daemon mounts them. */
export async function servePaymentRoutes(h: Harness): Promise<{ server: Server; base: string }> {
  const app = express()
  const router = express.Router()
  h.payments.mountRoutes(router)
  app.use(router)
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

/**
 * Connects the loopback BTCPay as the active provider, and an outbound endpoint subscribed to
 * every event, so the deliveries show what left the shop.
 */
export async function connectShop(h: Harness, btcpay: FakeBtcpay): Promise<void> {
  await h.payments.providers.connectBtcpay({
    baseUrl: btcpay.url,
    storeId: btcpay.storeId,
    apiKey: btcpay.apiKey,
    webhookSecret: btcpay.webhookSecret,
  })
  h.payments.outbox.createEndpoint(
    WebhookEndpointInput.parse({ url: 'http://127.0.0.1:9/hook', secret: 'x'.repeat(16) }),
  )
}
