import { expect, test } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'

// A license with an active machine: its detail card keeps Deactivate inside the card at a desktop
// width, and names the product.
const auth = { authorization: `Bearer ${E2E_TOKEN}` }

test('a license with a machine keeps Deactivate inside its card at 1440x900', async ({ page, request }) => {
  const found = (await (await request.get('/v1/admin/products?q=notes', { headers: auth })).json()) as {
    products: { id: string; slug: string }[]
  }
  const product = found.products.find((p) => p.slug === 'notes')
  expect(product, 'the demo seeds the notes product').toBeDefined()
  const issued = await request.post('/v1/admin/licenses', {
    headers: auth,
    data: { product_id: product!.id, buyer_email: 'seat@example.com' },
  })
  expect(issued.status()).toBe(200)
  const { license, license_key } = (await issued.json()) as { license: { id: string }; license_key: string }
  const seat = await request.post('/v1/machines/activate', {
    data: {
      key: license_key,
      fingerprint: 'e2e-machine-with-a-rather-long-fingerprint-0123456789abcdef',
      hostname: 'workstation-with-a-long-name.example.lan',
      platform: 'linux-x86_64',
    },
  })
  expect(seat.status()).toBe(200)

  await page.setViewportSize({ width: 1440, height: 900 })
  await logIn(page)
  await page.goto('/#/licensing?tab=licenses')
  await page.getByRole('button', { name: license.id.slice(0, 8) }).click()

  const card = page.locator('.card', { has: page.getByRole('heading', { name: /^Machines$/ }) })
  const deactivate = card.getByRole('button', { name: 'Deactivate' })
  await expect(deactivate).toBeVisible()
  const inside = await deactivate.evaluate((button) => {
    const cardBox = button.closest('.card')!.getBoundingClientRect()
    const b = button.getBoundingClientRect()
    // Visible within the card (a scrolling table may hide it only behind the card's own scroll).
    const scroller = button.closest('.table-scroll')?.getBoundingClientRect() ?? cardBox
    return b.left >= cardBox.left && b.right <= cardBox.right + 0.5 && b.right <= scroller.right + 0.5
  })
  expect(inside, 'Deactivate lies inside the license card').toBe(true)
  await expect(card.locator('dd', { hasText: 'Notes Pro' })).toBeVisible()
})
