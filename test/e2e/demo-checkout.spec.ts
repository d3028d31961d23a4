import { expect, test } from '@playwright/test'

/**
 * A newcomer buys in the demo (issue 13, item 6): the buy page, the demo BTCPay checkout page and
 * its "Pay" button (the fake's real signed webhook), back to the thank-you page with a key that
 * validates. No console error on the way (the favicon included).
 */
test('a complete purchase through the demo checkout page ends on thank-you with a valid key', async ({
  page,
  request,
  baseURL,
}) => {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text())
  })

  await page.goto('/buy/notes')
  await expect(page.locator('h1')).toHaveText('Notes Pro')
  await page.locator('#buyer_email').fill('newcomer@example.com')
  await page.getByRole('button', { name: 'Continue to payment' }).click()
  await page.waitForURL(/\/i\/[A-Za-z0-9]+$/)
  await expect(page.getByRole('button', { name: 'Expire' })).toBeVisible()
  await page.getByRole('button', { name: 'Pay' }).click()

  await page.waitForURL(new RegExp(`^${baseURL}/thank-you\\?invoice=`))
  await expect(page.locator('#status')).toContainText('Paid')
  const key = (await page.locator('#license-key').textContent())!.trim()
  expect(key).toMatch(/^LIC1-[A-Z2-7]+-[A-Z2-7]+$/)
  await expect(page.locator('#copy')).toBeVisible()
  await expect(page.getByText('Back to the payment page')).toHaveCount(0)

  const v = await (await request.post('/v1/validate', { data: { key, product_slug: 'notes' } })).json()
  expect(v.ok).toBe(true)
  expect((await request.get('/favicon.ico')).status()).toBe(200)
  expect(errors).toEqual([])
})
