import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { swapIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook, type Look } from './looks'

// One record of the loaded model, a swap and a download (issue 31): the demo's swaps load for
// DEMO_LOAD_MS (playwright.config.ts), long enough to reload mid-swap and watch the ETA count down.
// Each swap is watched in two looks (a reload in each), so two swaps cover both widths and themes.
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** A solo catalog model of the demo that is not loaded at start (32.5 GB: a first load's estimate is ~16 s). */
const TARGET = 'qwen3-coder-30b-a3b-fp8'
const TARGET_REPO = 'Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8'
/** The model the demo starts with (test/sim/demoState.ts); the second swap goes back to it. */
const START = 'qwen3-32b-fp8'

async function openModels(page: Page): Promise<void> {
  await openView(page, 'models')
  await expect(page.locator('article.model').first()).toBeVisible()
}

/** Seconds in "about 14s left" / "about 1m left". */
function etaSeconds(text: string): number {
  const m = /about (?:(\d+)m )?(?:(\d+)s)? ?left|about (\d+)m left/.exec(text)
  if (!m) throw new Error(`no ETA in "${text}"`)
  return Number(m[1] ?? m[3] ?? 0) * 60 + Number(m[2] ?? 0)
}

async function startSwap(page: Page, key: string): Promise<void> {
  const card = page.locator(`article.model[data-key="${key}"]`)
  await card.getByRole('button', { name: 'Swap…' }).click()
  const confirm = card.getByRole('button', { name: /Confirm swap/ })
  await expect(confirm).toBeEnabled({ timeout: 20_000 })
  await confirm.click()
  const anyway = card.getByRole('button', { name: 'Swap anyway' })
  if (await anyway.isVisible().catch(() => false)) await anyway.click()
  await expect(page.locator('.loaded-bar')).toContainText('swapping', { timeout: 10_000 })
}

/** After a reload in `look`: the swap still shows, every Swap is disabled, and the ETA counts down. */
async function expectSwapAfterReload(page: Page, look: Look, label: RegExp): Promise<void> {
  await useLook(page, look)
  await page.reload()
  await expect(page.locator('article.model').first()).toBeVisible()
  const bar = page.locator('.loaded-bar')
  await expect(bar).toContainText('swapping')
  await expect(bar).not.toContainText('No model is loaded')
  await expect(bar).not.toContainText('up -')
  const swapButtons = page.getByRole('button', { name: 'Swap…' })
  const count = await swapButtons.count()
  expect(count).toBeGreaterThan(1)
  for (let i = 0; i < count; i++) await expect(swapButtons.nth(i)).toBeDisabled()

  const eta = page.locator('[data-test="swap-eta"]')
  await expect(eta).toContainText(/about \d+s left/, { timeout: 10_000 })
  await expect(eta).toContainText(label)
  await expect(eta).toBeVisible()
  const first = etaSeconds((await eta.textContent()) ?? '')
  await expect.poll(async () => etaSeconds((await eta.textContent()) ?? ''), { timeout: 5000 }).toBeLessThan(first)
  const progress = page.locator('section[aria-label="Swap progress"]')
  await expectLook(page, look, bar, progress.locator('h2'), progress.locator('.phases li'), eta)
}

/** Done: the box says how long it took, with no placeholder figures; the header shows the new model. */
async function expectSwapDone(page: Page, look: Look): Promise<void> {
  await expect(page.locator('[data-test="swap-took"]')).toBeVisible({ timeout: 45_000 })
  await expect(page.locator('section[aria-label="Swap progress"]')).not.toContainText('— of —')
  const bar = page.locator('.loaded-bar')
  await expect(bar).toContainText('loaded')
  await expect(bar).not.toContainText('up -')
  await expectLook(page, look, bar, page.locator('[data-test="swap-took"]'))
}

test.describe.configure({ mode: 'serial' })

// The first load of TARGET has no remembered load time: its ETA is an estimate, and says so.
const SWAPS = [
  { to: TARGET, looks: [LOOKS[0]!, LOOKS[3]!], label: /Estimate from the weights' size/ },
  { to: START, looks: [LOOKS[1]!, LOOKS[2]!], label: /Estimate from the weights' size|Based on its last load/ },
]

for (const swap of SWAPS)
  test(`a reload mid-swap to ${swap.to} (${swap.looks.map(lookName).join(', then ')}): running, Swap disabled, ETA counting down`, async ({
    page,
  }) => {
    test.setTimeout(90_000)
    await useLook(page, swap.looks[0]!)
    await logIn(page)
    await openModels(page)
    await swapIdle(page)
    await startSwap(page, swap.to)

    // A second swap is refused by the daemon while this one runs.
    const second = await page.request.post('/api/swap/gemma4-26b-a4b-nvfp4', { headers: auth, data: {} })
    expect(second.status()).toBe(409)

    for (const look of swap.looks) await expectSwapAfterReload(page, look, swap.label)
    await expectSwapDone(page, swap.looks[1]!)
  })

async function openDownloads(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Downloads' }).click()
}

test('a finished download keeps its result card, with no "Add to catalog" for a repo in the catalog', async ({
  page,
}) => {
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openModels(page)
  await swapIdle(page)
  await openDownloads(page)
  await page.locator('#dl-repo').fill(TARGET_REPO)
  await page.getByRole('button', { name: 'Download', exact: true }).click()
  const result = page.locator('[data-test="download-result"]')
  await expect(result).toBeVisible({ timeout: 30_000 })
  await expect(page.getByRole('heading', { name: /Add a model from/ })).toHaveCount(0)

  // The daemon still has the finished job: a reload, in every look, shows the same card until it is dismissed.
  for (const look of LOOKS) {
    await useLook(page, look)
    await page.reload()
    await openDownloads(page)
    await expect(result).toContainText(TARGET_REPO)
    await expect(result).toContainText('node1')
    await expect(result).toContainText('32.5 GB')
    await expect(result).toContainText(/\d+(\.\d+)? [KMGT]?B\/s/)
    await expect(result).toContainText('already in the catalog')
    await expect(result.getByRole('button', { name: 'Add to catalog' })).toHaveCount(0)
    await expect(result.getByRole('button', { name: 'Dismiss' })).toBeInViewport()
    await expectLook(page, look, result.locator('h3 .badge'), result.locator('dt, dd'), result.locator('p'))
  }
  await result.getByRole('button', { name: 'Dismiss' }).click()
  await expect(result).toHaveCount(0)
  await page.reload()
  await openDownloads(page)
  await expect(page.getByText('Nothing downloading')).toBeVisible()
})
