import fs from 'node:fs'
import path from 'node:path'
import { expect, test } from '@playwright/test'
import { logIn } from './login'

// `npm run screenshots` writes into docs/screenshots for the README; the suite writes into test-results.
const OUT = process.env.SCREENSHOTS_DIR ?? 'test-results/screenshots'

test.beforeEach(async ({ page }) => {
  await logIn(page)
})

for (const view of ['cluster', 'models', 'services', 'gateway', 'licensing', 'settings']) {
  test(`${view} view renders against the demo @screenshot`, async ({ page }) => {
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    await page.getByTestId(`nav-${view}`).click()
    await expect(page).toHaveURL(new RegExp(`#/${view}`))
    await expect(page.locator('main h1').first()).toBeVisible()
    await page.waitForLoadState('networkidle')
    // Let polled data and charts settle before the picture.
    await page.waitForTimeout(1500)
    fs.mkdirSync(OUT, { recursive: true })
    await page.screenshot({ path: path.join(OUT, `${view}.png`), fullPage: true })
    expect(errors).toEqual([])
  })
}
