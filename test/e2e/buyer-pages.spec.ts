import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { WIDTHS, expectEachTheme, looksAt, useLook } from './looks'

/**
 * What a buyer sees (issue 31, findings 5 and 6), on a phone and a desktop, light and dark: the
 * thank-you page waits for a payment without thanking anyone, then shows the key once paid; an
 * invoice left to expire thanks nobody, mentions no key and leads back to the buy page; "Apply
 * code" shows the price after a discount code before anything is paid.
 */
const auth = { authorization: `Bearer ${E2E_TOKEN}` }

function watchErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text())
  })
  return errors
}

/** From the buy page to the demo's checkout page; answers the daemon's invoice id. */
async function checkout(page: Page): Promise<string> {
  await page.goto('/buy/notes')
  await page.getByRole('button', { name: 'Continue to payment' }).click()
  await page.waitForURL(/\/i\/[A-Za-z0-9-]+$/)
  const providerId = page.url().split('/i/')[1]!
  const list = await page.request.get(`/v1/admin/invoices?q=${providerId}`, { headers: auth })
  expect(list.ok()).toBe(true)
  return ((await list.json()) as { items: { id: string }[] }).items[0]!.id
}

// One purchase per width; each state is looked at in light and dark (the scheme switches live).
for (const width of WIDTHS)
  test.describe(`buyer pages at ${width} px, light and dark`, () => {
    test.beforeEach(async ({ page }) => {
      await useLook(page, looksAt(width)[0]!)
    })

    test('waiting for payment: no thanks and no key until paid, then the key', async ({ page, baseURL }) => {
      const errors = watchErrors(page)
      const invoice = await checkout(page)

      await page.goto(`/thank-you?invoice=${invoice}`)
      await expect(page.locator('h1')).toHaveText('Waiting for your payment')
      await expect(page.locator('#status')).toContainText('not seen your payment')
      expect(await page.locator('main').innerText()).not.toMatch(/thank you/i)
      await expect(page.locator('#license-key')).toHaveCount(0)
      await expectEachTheme(page, width, page.locator('h1, #status, #pay-link a'))

      // The way back to the payment page, and paying there, ends on the key.
      await page.getByRole('link', { name: 'Back to the payment page' }).click()
      await page.waitForURL(/\/i\/[A-Za-z0-9-]+$/)
      await page.getByRole('button', { name: 'Pay' }).click()
      await page.waitForURL(new RegExp(`^${baseURL}/thank-you\\?invoice=${invoice}`))
      await expect(page.locator('h1')).toHaveText('Thank you for buying Notes Pro')
      await expect(page.locator('#license-key')).toHaveText(/^LIC1-[A-Z2-7]+-[A-Z2-7]+$/)
      await expect(page.locator('#copy')).toBeVisible()
      await expect(page.getByText('Back to the payment page')).toHaveCount(0)
      await expectEachTheme(page, width, page.locator('h1, #status, #license-key, #copy'))
      expect(errors).toEqual([])
    })

    test('an expired invoice: no thanks, no key wording, and the link back to the buy page works', async ({
      page,
      baseURL,
    }) => {
      const errors = watchErrors(page)
      await checkout(page)
      await page.getByRole('button', { name: 'Expire' }).click()

      await page.waitForURL(new RegExp(`^${baseURL}/thank-you\\?invoice=`))
      await expect(page.locator('h1')).toHaveText('This invoice expired')
      await expect(page.locator('#status')).toContainText('expired before it was paid')
      const text = await page.locator('main').innerText()
      expect(text).not.toMatch(/thank you/i)
      expect(text).not.toMatch(/\bkey\b/i)
      await expect(page.locator('#license-key')).toHaveCount(0)
      await expect(page.locator('#buy-again')).toBeInViewport()
      await expectEachTheme(page, width, page.locator('h1, #status, #buy-again'))

      await page.locator('#buy-again').click()
      await expect(page).toHaveURL(`${baseURL}/buy/notes`)
      await expect(page.locator('h1')).toHaveText('Notes Pro')
      expect(errors).toEqual([])
    })

    test('"Apply code" shows the price after the code, naming it and the saving', async ({ page }) => {
      const errors = watchErrors(page)
      await page.goto('/buy/notes')
      await page.locator('input[name="policy"][value="team"]').check()
      await page.locator('#code').fill('LAUNCH20')
      await page.getByRole('button', { name: 'Apply code' }).click()

      const box = page.locator('#discount-preview')
      await expect(box).toBeVisible()
      await expect(box).toContainText('Code LAUNCH20 on Team')
      await expect(box).toContainText('You save 36,000 sats')
      await expect(box).toContainText('Due now: 144,000 sats')
      await expect(box.locator('s')).toHaveText('180,000 sats')
      // The form is still there, with the code and tier kept for "Continue to payment".
      await expect(page.locator('#code')).toHaveValue('LAUNCH20')
      await expect(page.locator('input[name="policy"][value="team"]')).toBeChecked()
      await expect(page.getByRole('button', { name: 'Continue to payment' })).toBeEnabled()
      await expectEachTheme(page, width, box.locator('p, s'))
      expect(errors).toEqual([])
    })
  })
