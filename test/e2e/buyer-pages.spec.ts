import { expect, test, type Page } from '@playwright/test'

/**
 * What a buyer sees (issue 31, findings 5 and 6), on a phone and a desktop: an invoice left to
 * expire on the demo checkout page thanks nobody, mentions no key and leads back to the buy page;
 * "Apply code" shows the price after a discount code before anything is paid.
 */
function watchErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text())
  })
  return errors
}

/** Nothing wider than the viewport: the page reads without sideways scrolling. */
async function fitsWidth(page: Page): Promise<void> {
  // A string: this file is compiled without the DOM's types.
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')
  expect(overflow).toBeLessThanOrEqual(0)
}

for (const width of [390, 1440]) {
  test.describe(`buyer pages at ${width} px`, () => {
    test.use({ viewport: { width, height: 900 } })

    test('an expired invoice: no thanks, no key wording, and the link back to the buy page works', async ({
      page,
      baseURL,
    }) => {
      const errors = watchErrors(page)
      await page.goto('/buy/notes')
      await page.getByRole('button', { name: 'Continue to payment' }).click()
      await page.waitForURL(/\/i\/[A-Za-z0-9]+$/)
      await page.getByRole('button', { name: 'Expire' }).click()

      await page.waitForURL(new RegExp(`^${baseURL}/thank-you\\?invoice=`))
      await expect(page.locator('h1')).toHaveText('This invoice expired')
      await expect(page.locator('#status')).toContainText('expired before it was paid')
      const text = await page.locator('main').innerText()
      expect(text).not.toMatch(/thank you/i)
      expect(text).not.toMatch(/\bkey\b/i)
      await expect(page.locator('#license-key')).toHaveCount(0)
      await fitsWidth(page)

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
      await fitsWidth(page)
      expect(errors).toEqual([])
    })
  })
}
