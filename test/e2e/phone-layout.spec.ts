import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, useLook } from './looks'

/**
 * At 390 px (issue 31, finding 8) every action stays on screen without scrolling sideways,
 * Settings folds into short sections with one label per field, and SSH commands sit behind Copy.
 * The same actions are checked at 1440 px, each width in light and dark.
 */
const ACTIONS = 'main button:visible, main a.button:visible, main summary:visible'

async function expectNothingOffScreen(page: Page, width: number): Promise<void> {
  const scrollWidth = await page.evaluate('document.scrollingElement.scrollWidth')
  expect(scrollWidth).toBeLessThanOrEqual(width + 1)
  const off: string[] = []
  for (const el of await page.locator(ACTIONS).all()) {
    const box = await el.boundingBox()
    if (box && box.x + box.width > width + 1) off.push(`${(await el.innerText()).trim()} (right ${box.x + box.width})`)
  }
  expect(off).toEqual([])
}

for (const look of LOOKS) {
  const phone = look.width < 900
  test(`${lookName(look)}: Services, Cluster and Settings keep every action on screen`, async ({
    page,
    context,
    request,
  }) => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'])
    // An app's failure report with a long error: the events table gets a wide detail column.
    const report = await request.post('/api/health-event', {
      headers: { authorization: `Bearer ${E2E_TOKEN}` },
      data: { service: 'llm', ok: false, source: 'phone-layout-spec', error: 'upstream reset '.repeat(20), ms: 1234 },
    })
    expect(report.ok()).toBe(true)
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    await useLook(page, look)
    await logIn(page)

    // Cluster: the services table (Start/Restart/Stop) and the events' detail column.
    await expect(page.getByTestId('cluster-services')).toBeVisible({ timeout: 30_000 })
    await expect(page.getByTestId('cluster-services').getByRole('button', { name: 'Stop' }).first()).toBeVisible()
    await expect(page.getByTestId('cluster-events')).toBeVisible({ timeout: 30_000 })
    await expectNothingOffScreen(page, look.width)
    await expectLook(page, look, page.getByTestId('cluster-services').locator('button, .badge'))

    await page.goto('/#/services')
    await expect(page.getByTestId('deep-health-table')).toBeVisible({ timeout: 30_000 })
    await expect(page.getByRole('button', { name: /Run the .* probe now/ }).first()).toBeVisible()
    await expect(page.getByRole('article', { name: /^service / }).first()).toBeVisible()
    await expectNothingOffScreen(page, look.width)
    await expectLook(page, look, page.locator('main article button:visible, main article .badge:visible'))

    await page.goto('/#/settings')
    await expect(page.getByTestId('settings-group-nodes')).toBeVisible()
    if (phone) {
      // Every section starts folded on a phone: the page stays short.
      for (const d of await page.locator('details.settings-group').all())
        expect(await d.getAttribute('open')).toBeNull()
      const height = Number(await page.evaluate('document.scrollingElement.scrollHeight'))
      expect(height).toBeLessThan(2500)
      await expectNothingOffScreen(page, look.width)
    }

    // Opened, each field shows one label: the help line never repeats it.
    for (const group of await page.locator('details.settings-group').all())
      if ((await group.getAttribute('open')) === null) await group.locator('summary').first().click()
    const fields = page.locator('[data-testid^="setting-"]:has(input)')
    expect(await fields.count()).toBeGreaterThan(10)
    for (const field of await fields.all()) {
      await expect(field.locator('label:visible')).toHaveCount(1)
      const label = (await field.locator('label').innerText()).trim().toLowerCase()
      const help = field.locator('.setting-help')
      if ((await help.count()) > 0) expect((await help.innerText()).trim().toLowerCase()).not.toBe(label)
    }
    await expectNothingOffScreen(page, look.width)
    await expectLook(page, look)

    // The SSH key's commands: a line and Copy; the exact text only when unfolded.
    const snippet = page.getByTestId('ssh-snippet').nth(1)
    const command = snippet.locator('pre')
    await expect(command).toBeHidden()
    await snippet.getByRole('button', { name: /^Copy command for/ }).click()
    await snippet.locator('summary').click()
    await expect(command).toBeVisible()
    const text = await command.innerText()
    expect(text).toContain('authorized_keys')
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(text)
    const box = await command.boundingBox()
    expect(box!.x + box!.width).toBeLessThanOrEqual(look.width + 1)
    expect(errors).toEqual([])
  })
}
