import { expect, test, type Locator, type Page } from '@playwright/test'
import { placementsIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook, type Look } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 46, items 2 and 7, and finding 10's card order: progress where the eye is after Confirm
// swap, a disabled Confirm that says why, placing where the weights are not, and cards that keep
// their place after a swap; at 390 and 1440 px, light and dark. Its own demo: it swaps and places.
const PORT = Number(process.env.E2E_MODELS_PROGRESS_PORT ?? 23_001)
/** Two solo models the demo keeps on node1, swapped back and forth. */
const SWAP_KEYS = ['qwen3-coder-30b-a3b-fp8', 'qwen3-32b-fp8'] as const
/** A third solo model, whose Confirm the second tab waits at. */
const WAITING_KEY = 'qwen3-vl-30b-a3b-fp8'
/** A model the demo keeps on node1 only: node2 reads "not on disk" for it. */
const NOT_ON_NODE2 = 'glm-4.7-flash-awq'

useOwnDemo(PORT, 'e2e-models-progress-data', { DEMO_LOAD_MS: '6000' })

const card = (page: Page, key: string): Locator => page.locator(`article.model[data-key="${key}"]`)
const cardOrder = (page: Page): Promise<string[]> =>
  page.locator('article.model').evaluateAll((els) => els.map((e) => e.getAttribute('data-key') ?? ''))

/** The element is inside the viewport (at least its top line). */
async function expectInViewport(page: Page, target: Locator): Promise<void> {
  const box = await target.boundingBox()
  const view = page.viewportSize()
  expect(box, 'the element is laid out').not.toBeNull()
  expect(box!.y).toBeGreaterThanOrEqual(0)
  expect(box!.y + Math.min(box!.height, 20)).toBeLessThanOrEqual(view!.height)
}

/** Opens `key`'s swap dialog and waits until its Confirm may be pressed. */
async function openSwap(page: Page, key: string): Promise<Locator> {
  const c = card(page, key)
  await c.getByRole('button', { name: 'Swap…' }).click()
  const confirm = c.getByRole('button', { name: /^Confirm swap/ })
  await expect(confirm).toBeEnabled({ timeout: 30_000 })
  return confirm
}

async function swapIn(page: Page, look: Look, key: string): Promise<void> {
  await useLook(page, look)
  await openView(page, 'models')
  await expect(card(page, key)).toBeVisible()
  const before = await cardOrder(page)
  const confirm = await openSwap(page, key)
  await confirm.scrollIntoViewIfNeeded()
  await confirm.click()
  // Right after Confirm: the progress is in view and has the focus, wherever the card was.
  const heading = page.locator('#job-progress h2')
  await expect(heading).toBeFocused()
  await expectInViewport(page, heading)
  await expect(heading).toContainText(/Swapping to/)
  await expectLook(page, look)
  // Done: it says what it did, with the steps that ran (a swap stops the model it replaces).
  await expect(heading).toContainText(/^\s*Swapped to/, { timeout: 45_000 })
  const steps = page.locator('#job-progress ol.phases li')
  await expect(steps).toHaveText(['Validating', 'Stopping the current engine', 'Launching', 'Loading', 'Ready'])
  // The cards keep their order: the one now loaded does not jump to the top.
  expect(await cardOrder(page)).toEqual(before)
  await page.locator('#job-progress').getByRole('button', { name: 'Dismiss' }).click()
  await placementsIdle(page)
}

test(`Confirm swap brings the progress into view with the focus; cards keep their order (${LOOKS.map(lookName).join(', ')})`, async ({
  page,
}) => {
  test.setTimeout(240_000)
  await logIn(page)
  for (const [i, look] of LOOKS.entries()) await swapIn(page, look, SWAP_KEYS[i % 2]!)
})

test('a second tab: Confirm swap is disabled while a swap runs, and says which swap, where, with a link to its progress', async ({
  page,
  context,
}) => {
  test.setTimeout(180_000)
  await logIn(page)
  // The second tab shares the first one's session.
  const other = await context.newPage()
  await other.goto('/#/cluster')
  await expect(other).toHaveURL(/#\/cluster/)
  // After the first test node1 runs SWAP_KEYS[1]: swap to the other and back, one per look.
  for (const [look, key] of [
    [LOOKS[0]!, SWAP_KEYS[0]],
    [LOOKS[3]!, SWAP_KEYS[1]],
  ] as const) {
    await useLook(page, look)
    await useLook(other, look)
    await openView(page, 'models')
    await openView(other, 'models')
    const name = ((await card(page, key).locator('h2').textContent()) ?? '').trim()
    const swapText = `a swap is in progress: ${name} on node1 (`
    // The second tab waits at its own Confirm (of a third model); the first starts a swap.
    const waiting = await openSwap(other, WAITING_KEY)
    const confirm = await openSwap(page, key)
    await confirm.click()
    await expect(waiting).toBeDisabled({ timeout: 15_000 })
    await expect(waiting).toHaveAttribute('title', new RegExp(escaped(swapText)))
    const why = other.locator(`#${await waiting.getAttribute('aria-describedby')}`)
    await expect(why).toContainText(`Cannot swap now: ${swapText}`)
    await expect(waiting).toHaveAccessibleDescription(new RegExp(escaped(swapText)))
    await expectLook(other, look, why)
    await why.getByRole('link', { name: 'See its progress' }).click()
    const heading = other.locator('#job-progress h2')
    await expect(heading).toBeFocused()
    await expectInViewport(other, heading)
    await expect(page.locator('#job-progress h2')).toContainText(/Swapped to/, { timeout: 45_000 })
    await placementsIdle(page)
    await other.reload()
  }
})

const escaped = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Opens Place on… for NOT_ON_NODE2, picks node2 and presses Place: the warning answers. */
async function placeOnNode2(page: Page): Promise<Locator> {
  await openView(page, 'models')
  const c = card(page, NOT_ON_NODE2)
  await expect(c).toContainText('node2: not on disk', { timeout: 20_000 })
  await c.getByRole('button', { name: 'Swap…' }).click()
  await c.getByRole('button', { name: 'Place on…' }).click()
  const panel = c.locator('section.place-panel')
  await panel.locator('li[data-node="node2"]').getByRole('checkbox').check()
  const place = panel.getByRole('button', { name: 'Place on node2' })
  await expect(place).toBeEnabled({ timeout: 20_000 })
  await place.click()
  const ask = panel.getByRole('alertdialog', { name: 'The weights are not there' })
  await expect(ask).toContainText('not on disk on node2')
  return ask
}

test(`placing where the weights are not warns: download first, or place anyway ("Placed … on node2", no stop) (${LOOKS.map(lookName).join(', ')})`, async ({
  page,
}) => {
  test.setTimeout(180_000)
  await logIn(page)
  for (const look of LOOKS) {
    await useLook(page, look)
    const ask = await placeOnNode2(page)
    await expect(ask.getByRole('button', { name: 'Download to node2 first' })).toBeFocused()
    await expect(ask.getByRole('button', { name: 'Place anyway' })).toBeEnabled()
    await expectLook(page, look, ask)
    await ask.getByRole('button', { name: 'Back' }).click()
    await card(page, NOT_ON_NODE2).getByRole('button', { name: 'Cancel' }).click()
  }

  // Place anyway: a placement on a free node, not a swap, with only the steps that ran.
  await (await placeOnNode2(page)).getByRole('button', { name: 'Place anyway' }).click()
  const heading = page.locator('#job-progress h2')
  await expect(heading).toBeFocused()
  await expectInViewport(page, heading)
  await expect(heading).toContainText(/Placed GLM.* on node2/, { timeout: 45_000 })
  await expect(page.locator('#job-progress ol.phases li')).toHaveText(['Validating', 'Launching', 'Loading', 'Ready'])
  await placementsIdle(page)

  // Download first: the download starts to node2 and its panel takes the eye and the focus.
  await page.locator('#job-progress').getByRole('button', { name: 'Dismiss' }).click()
  await page.reload()
  const ask = await placeOnNode2(page)
  await ask.getByRole('button', { name: 'Download to node2 first' }).click()
  const downloads = page.locator('#models-panel')
  const title = downloads.getByRole('heading', { name: 'Downloads' })
  await expect(title).toBeFocused()
  await expectInViewport(page, title)
  await expect(downloads).toContainText('cyankiwi/GLM-4.7-Flash-AWQ-4bit')
})
