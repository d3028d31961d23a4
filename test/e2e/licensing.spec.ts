import fs from 'node:fs'
import path from 'node:path'
import { expect, test } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { FakeBtcpay } from '../fakes/btcpay'
import { logIn } from './login'

const OUT = process.env.SCREENSHOTS_DIR ?? 'test-results/screenshots'
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
let btcpay: FakeBtcpay

test.beforeAll(async ({ request, baseURL }) => {
  btcpay = await new FakeBtcpay().start()
  btcpay.webhookUrl = `${baseURL}/v1/btcpay/webhook`
  const connect = await request.post('/v1/admin/btcpay/connect', {
    headers: auth,
    data: {
      base_url: btcpay.url,
      store_id: btcpay.storeId,
      api_key: btcpay.apiKey,
      webhook_secret: btcpay.webhookSecret,
    },
  })
  expect(connect.status()).toBe(200)
  const found = (await (await request.get('/v1/admin/products?q=e2e-app', { headers: auth })).json()) as {
    products: { slug: string }[]
  }
  if (!found.products.some((p) => p.slug === 'e2e-app')) {
    const res = await request.post('/v1/admin/products', {
      headers: auth,
      data: { slug: 'e2e-app', name: 'E2E App', description: 'Bought by the browser suite.', price_value: 21_000 },
    })
    expect(res.status()).toBe(200)
  }
})

test.afterAll(async () => {
  await btcpay?.stop()
})

test('a buyer pays on the buy page and the thank-you page shows the key @screenshot', async ({
  page,
  context,
  request,
}) => {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  await context.grantPermissions(['clipboard-read', 'clipboard-write'])

  await page.goto('/buy/e2e-app')
  await expect(page.locator('h1')).toHaveText('E2E App')
  await page.locator('#buyer_email').fill('browser@example.com')
  await page.getByRole('button', { name: 'Continue to payment' }).click()
  // The redirect page moves on by itself to the provider's checkout.
  await page.waitForURL(new RegExp(`^${btcpay.url}/i/`))
  const providerId = page.url().split('/i/')[1]!
  const list = (await (await request.get(`/v1/admin/invoices?q=${providerId}`, { headers: auth })).json()) as {
    items: { id: string }[]
  }
  const invoiceId = list.items[0]!.id

  await page.goto(`/thank-you?invoice=${invoiceId}`)
  await expect(page.locator('h1')).toHaveText('Waiting for your payment')
  await expect(page.locator('#license-key')).toBeHidden()

  expect((await btcpay.pay(providerId)).status).toBe(200)
  // The page polls /v1/purchase/:id by itself and, once paid, reloads to show the key.
  await expect(page.locator('#license-key')).toBeVisible({ timeout: 15_000 })
  const key = (await page.locator('#license-key').textContent())!.trim()
  expect(key).toMatch(/^LIC1-[A-Z2-7]+-[A-Z2-7]+$/)
  await page.locator('#copy').click()
  await expect(page.locator('#copy')).toHaveText('Copied')
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key)
  fs.mkdirSync(OUT, { recursive: true })
  await page.screenshot({ path: path.join(OUT, 'licensing-thank-you.png'), fullPage: true })

  const v = await (await request.post('/v1/validate', { data: { key, product_slug: 'e2e-app' } })).json()
  expect(v.ok).toBe(true)
  expect(errors).toEqual([])
})

test('the Licensing section shows the sale and the provider @screenshot', async ({ page }) => {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  await logIn(page)
  await page.getByTestId('nav-licensing').click()
  await expect(page.getByRole('tab', { name: 'Overview' })).toHaveAttribute('aria-selected', 'true')
  await expect(page.getByText('Revenue per day')).toBeVisible()

  await page.getByTestId('lic-tab-invoices').click()
  await expect(page.locator('td .badge', { hasText: 'settled' }).first()).toBeVisible()
  await page.getByTestId('lic-tab-payments').click()
  await expect(page.locator('.badge', { hasText: 'active' }).first()).toBeVisible()
  await expect(page.getByText('/v1/btcpay/webhook')).toBeVisible()
  // Credentials never reach the page.
  expect(await page.content()).not.toContain(btcpay.apiKey)
  expect(await page.content()).not.toContain(btcpay.webhookSecret)

  await page.getByTestId('lic-tab-licenses').click()
  await expect(page.getByText('browser@example.com').first()).toBeVisible()
  fs.mkdirSync(OUT, { recursive: true })
  await page.screenshot({ path: path.join(OUT, 'licensing-licenses.png'), fullPage: true })
  expect(errors).toEqual([])
})
