import { expect, test, type Page } from '@playwright/test'
import { logIn } from './login'
import { overflowOf } from './looks'

// Every view and Licensing tab at phone and desktop widths, light and dark: no page-wide
// horizontal scroll (tables scroll inside their card or stack) and no console errors.
const VIEWS = ['cluster', 'models', 'services', 'gateway', 'settings'] as const
const LICENSING_TABS = [
  'overview',
  'products',
  'licenses',
  'access',
  'subscriptions',
  'machines',
  'discounts',
  'invoices',
  'payments',
  'rates',
  'webhooks',
  'audit',
] as const
const SIZES = [
  { name: 'phone', width: 390, height: 844 },
  { name: 'desktop', width: 1440, height: 900 },
] as const

async function settle(page: Page): Promise<void> {
  await expect(page.locator('main h1').first()).toBeVisible()
  await page.waitForLoadState('networkidle')
}

for (const size of SIZES)
  for (const theme of ['light', 'dark'] as const)
    test(`every view and tab fits ${size.width}x${size.height} in ${theme}`, async ({ page }) => {
      test.setTimeout(180_000)
      await page.setViewportSize({ width: size.width, height: size.height })
      await page.emulateMedia({ colorScheme: theme })
      await page.addInitScript(
        (t) =>
          (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
            'tandem-theme',
            t,
          ),
        theme,
      )
      const errors: string[] = []
      page.on('pageerror', (err) => errors.push(`${page.url()}: ${err.message}`))
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(`${page.url()}: ${msg.text()}`)
      })
      await logIn(page)
      await expect(page.locator('html')).toHaveAttribute('data-theme', theme)

      const failures: string[] = []
      const check = async (where: string): Promise<void> => {
        await settle(page)
        const o = await overflowOf(page)
        if (o.scrollWidth > o.width)
          failures.push(`${where}: page is ${o.scrollWidth}px wide (${o.culprits.join(', ')})`)
      }
      for (const view of VIEWS) {
        if (size.width < 900) {
          // Under 900 px the sections are behind the menu button.
          await expect(page.getByTestId(`nav-${view}`)).toBeHidden()
          await page.getByTestId('menu-toggle').click()
        }
        await page.getByTestId(`nav-${view}`).click()
        await expect(page).toHaveURL(new RegExp(`#/${view}`))
        if (size.width < 900) await expect(page.getByTestId(`nav-${view}`)).toBeHidden()
        await check(view)
      }
      for (const tab of LICENSING_TABS) {
        await page.goto(`/#/licensing?tab=${tab}`)
        await expect(page.getByTestId(`lic-tab-${tab}`)).toHaveAttribute('aria-selected', 'true')
        await check(`licensing/${tab}`)
      }
      expect(failures).toEqual([])
      expect(errors).toEqual([])
    })
