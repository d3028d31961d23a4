import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'

// One record of the loaded model, a swap and a download (issue 31): the demo's swaps load for
// DEMO_LOAD_MS (playwright.config.ts), long enough to reload mid-swap and watch the ETA count down.
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** A solo catalog model of the demo that is not loaded at start (32.5 GB: a first load's estimate is ~16 s). */
const TARGET = 'qwen3-coder-30b-a3b-fp8'
const TARGET_REPO = 'Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8'

async function openModels(page: Page): Promise<void> {
  await page.getByTestId('nav-models').click()
  await expect(page).toHaveURL(/#\/models/)
  await expect(page.locator('article.model').first()).toBeVisible()
}

/** Seconds in "about 14s left" / "about 1m left". */
function etaSeconds(text: string): number {
  const m = /about (?:(\d+)m )?(?:(\d+)s)? ?left|about (\d+)m left/.exec(text)
  if (!m) throw new Error(`no ETA in "${text}"`)
  return Number(m[1] ?? m[3] ?? 0) * 60 + Number(m[2] ?? 0)
}

async function waitForIdle(page: Page): Promise<void> {
  await expect
    .poll(
      async () =>
        ((await (await page.request.get('/api/swap', { headers: auth })).json()) as { swapping: unknown }).swapping,
      {
        timeout: 45_000,
      },
    )
    .toBeNull()
}

test.beforeEach(async ({ page }) => {
  await logIn(page)
})

test('a reload mid-swap shows the swap running, Swap disabled, and an ETA that counts down', async ({ page }) => {
  test.setTimeout(90_000)
  await openModels(page)
  await waitForIdle(page)
  const card = page.locator(`article.model[data-key="${TARGET}"]`)
  await card.getByRole('button', { name: 'Swap…' }).click()
  const confirm = card.getByRole('button', { name: /Confirm swap/ })
  await expect(confirm).toBeEnabled({ timeout: 20_000 })
  await confirm.click()
  const anyway = card.getByRole('button', { name: 'Swap anyway' })
  if (await anyway.isVisible().catch(() => false)) await anyway.click()
  await expect(page.locator('.loaded-bar')).toContainText('swapping', { timeout: 10_000 })

  // A second swap is refused by the daemon while this one runs.
  const second = await page.request.post('/api/swap/gemma4-26b-a4b-nvfp4', { headers: auth, data: {} })
  expect(second.status()).toBe(409)

  await page.reload()
  await expect(page.locator('article.model').first()).toBeVisible()
  const bar = page.locator('.loaded-bar')
  await expect(bar).toContainText('swapping')
  await expect(bar).not.toContainText('No model is loaded')
  const swapButtons = page.getByRole('button', { name: 'Swap…' })
  const count = await swapButtons.count()
  expect(count).toBeGreaterThan(1)
  for (let i = 0; i < count; i++) await expect(swapButtons.nth(i)).toBeDisabled()

  const eta = page.locator('[data-test="swap-eta"]')
  await expect(eta).toContainText(/about \d+s left/, { timeout: 10_000 })
  await expect(eta).toContainText('Estimate')
  const first = etaSeconds((await eta.textContent()) ?? '')
  await page.waitForTimeout(3000)
  const later = etaSeconds((await eta.textContent()) ?? '')
  expect(later).toBeLessThan(first)

  // Done: the box says how long it took, with no placeholder figures; the header shows the new model.
  await expect(page.locator('[data-test="swap-took"]')).toBeVisible({ timeout: 45_000 })
  await expect(page.locator('section[aria-label="Swap progress"]')).not.toContainText('— of —')
  await expect(bar).toContainText('loaded')
  await expect(bar).not.toContainText('up -')
})

test('a finished download keeps its result card, with no "Add to catalog" for a repo in the catalog', async ({
  page,
}) => {
  await openModels(page)
  await waitForIdle(page)
  await page.getByRole('button', { name: 'Downloads' }).click()
  await page.locator('#dl-repo').fill(TARGET_REPO)
  await page.getByRole('button', { name: 'Download', exact: true }).click()
  const result = page.locator('[data-test="download-result"]')
  await expect(result).toBeVisible({ timeout: 30_000 })
  await expect(result).toContainText(TARGET_REPO)
  await expect(result).toContainText('node1')
  await expect(result).toContainText('32.5 GB')
  await expect(result).toContainText(/\d+(\.\d+)? [KMGT]?B\/s/)
  await expect(result).toContainText('already in the catalog')
  await expect(result.getByRole('button', { name: 'Add to catalog' })).toHaveCount(0)
  await expect(page.getByRole('heading', { name: /Add a model from/ })).toHaveCount(0)

  // The daemon still has the finished job: a reload shows the same card until it is dismissed.
  await page.reload()
  await page.getByRole('button', { name: 'Downloads' }).click()
  await expect(result).toContainText(TARGET_REPO)
  await result.getByRole('button', { name: 'Dismiss' }).click()
  await expect(result).toHaveCount(0)
  await page.reload()
  await page.getByRole('button', { name: 'Downloads' }).click()
  await expect(page.getByText('Nothing downloading')).toBeVisible()
})
