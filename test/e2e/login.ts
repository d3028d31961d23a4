import { expect, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'

/** Signs in to the demo's dashboard with the suite's admin token and waits for the Cluster view. */
export async function logIn(page: Page): Promise<void> {
  await page.goto('/#/login')
  await page.getByTestId('token').fill(E2E_TOKEN)
  await page.getByTestId('login-submit').click()
  await expect(page).toHaveURL(/#\/cluster/)
}
