import { expect, test } from '@playwright/test'

import { E2E_TOKEN as TOKEN } from '../../playwright.config'

test('login, navigate every view, and save a setting', async ({ page }) => {
  await page.goto('/')
  await expect(page).toHaveURL(/#\/login/)
  await page.getByTestId('token').fill('wrong-token-value')
  await page.getByTestId('login-submit').click()
  await expect(page.getByTestId('login-error')).toContainText('wrong admin token')

  await page.getByTestId('token').fill(TOKEN)
  await page.getByTestId('login-submit').click()
  await expect(page).toHaveURL(/#\/cluster/)
  await expect(page.getByTestId('version')).toContainText(/^\d+\.\d+\.\d+ \(build \d+\)$/)
  await expect(page.getByTestId('open-chat')).toHaveAttribute('href', 'http://127.0.0.1:1/chat')

  for (const view of ['models', 'services', 'gateway', 'licensing', 'settings', 'cluster']) {
    await page.getByTestId(`nav-${view}`).click()
    await expect(page).toHaveURL(new RegExp(`#/${view}`))
    await expect(page.locator('main h1').first()).toBeVisible()
  }

  await page.getByTestId('nav-settings').click()
  // Settings are folded into groups; open the ones this test reads.
  for (const name of ['setting-SCRUB_TERMS', 'setting-LLM_PORT']) {
    const group = page.locator('details').filter({ has: page.getByTestId(name) })
    if ((await group.getAttribute('open')) === null) await group.locator('summary').first().click()
  }
  const row = page.getByTestId('setting-SCRUB_TERMS')
  await expect(row.getByText('default')).toBeVisible()
  // Values fixed by the environment are shown but cannot be edited here.
  await expect(page.getByTestId('setting-LLM_PORT').locator('input')).toBeDisabled()
  await row.locator('input').fill('Project Falcon')
  await page.getByTestId('settings-save').click()
  await expect(page.getByTestId('settings-notice')).toContainText('Saved')
  // The page shows the saved value, marked as waiting for a restart.
  await expect(row.getByTestId('pending')).toBeVisible()
  await expect(row.locator('input')).toHaveValue('Project Falcon')
  await expect(page.getByTestId('settings-restart')).toBeVisible()
  await page.screenshot({ path: 'test-results/screenshots/settings.png', fullPage: true })

  // Secrets never reach the page.
  const html = await page.content()
  expect(html).not.toContain(TOKEN)

  await page.getByTestId('logout').click()
  await expect(page).toHaveURL(/#\/login/)
})
