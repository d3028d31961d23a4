import { expect, test, type Locator, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { placementsIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 34, the dashboard: "Place on…" in the Models view and what is placed on each node's card
// in the Cluster view, at 390 and 1440 px, light and dark. This spec runs its own demo (a
// placement changes what runs on node2, which the shared demo's other specs must not see) on
// another loopback port, with short loads.
const PORT = Number(process.env.E2E_PLACEMENTS_PORT ?? 19_985)
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** A bundled model whose weights the demo keeps on node2 (it runs across nodes), and that fits there solo. */
const TARGET = 'llama-3.3-70b-fp8'
const TARGET_SERVED = 'nvidia/Llama-3.3-70B-Instruct-FP8'
/** The model the demo starts with on node1 (test/sim/demoState.ts). */
const START_SERVED = 'Qwen/Qwen3-32B-FP8'

useOwnDemo(PORT, 'e2e-placements-data', { DEMO_LOAD_MS: '3000' })

/** The "Placed here" part of a node's card in the Cluster view. */
const placedOn = (page: Page, node: string): Locator => page.locator(`section[aria-label="Placed on ${node}"]`)

/** Opens the target's "Place on…" dialog in the Models view. */
async function openPlaceOn(page: Page): Promise<Locator> {
  await openView(page, 'models')
  const card = page.locator(`article.model[data-key="${TARGET}"]`)
  await card.getByRole('button', { name: 'Swap…' }).click()
  await expect(card.getByRole('button', { name: 'Replace on node1' })).toBeVisible()
  await card.getByRole('button', { name: 'Place on…' }).click()
  const panel = card.locator('section.place-panel')
  await expect(panel.locator('li[data-node="node2"]')).toBeVisible()
  return panel
}

test(`places ${TARGET} on node2 from Place on…: node2's card shows it, node1's model stays (${LOOKS.map(lookName).join(', ')})`, async ({
  page,
}) => {
  test.setTimeout(120_000)
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await expect(placedOn(page, 'node1')).toContainText(START_SERVED)
  await expect(placedOn(page, 'node2')).toContainText('Nothing placed.')
  await placementsIdle(page)

  const panel = await openPlaceOn(page)
  // node1 is taken: offered with what picking it would stop, not disabled.
  const node1 = panel.locator('li[data-node="node1"]')
  await expect(node1).toContainText(`taken by ${START_SERVED}`)
  await expect(node1).toContainText('placing here stops it')
  await expect(node1.getByRole('checkbox')).toBeEnabled()
  await panel.locator('li[data-node="node2"]').getByRole('checkbox').check()
  await expect(panel.locator('li[data-node="node2"]')).toContainText('head')
  await expect(panel).toContainText('On node2, solo')
  await expect(panel.locator('[data-test="place-displaces"]')).toHaveCount(0)
  const place = panel.getByRole('button', { name: 'Place on node2' })
  await expect(place).toBeEnabled({ timeout: 20_000 })
  await expectLook(page, LOOKS[0]!)
  await place.click()

  await openView(page, 'cluster')
  const node2 = placedOn(page, 'node2')
  await expect(node2.locator('[data-test="placement-model"]')).toContainText(TARGET_SERVED, { timeout: 20_000 })
  await expect(node2.locator('[data-test="placement-state"]')).toHaveText('ready', { timeout: 45_000 })
  await placementsIdle(page)

  // What a reload shows, in every look: node2 runs the new model, node1 still its own.
  for (const look of LOOKS) {
    await useLook(page, look)
    await page.reload()
    await expect(node2.locator('[data-test="placement-model"]')).toContainText(TARGET_SERVED)
    await expect(node2.locator('[data-test="placement-nodes"]')).toHaveText('node2, solo')
    await expect(node2.locator('[data-test="placement-state"]')).toHaveText('ready')
    await expect(node2.locator('[data-test="placement-memory"]')).toContainText(/reserves \d+(\.\d)? GB of memory here/)
    await expect(node2.locator('[data-test="placement-other"]')).toContainText(/other processes hold \d/)
    await expect(node2.getByRole('button', { name: 'Stop' })).toBeEnabled()
    await expect(placedOn(page, 'node1').locator('[data-test="placement-model"]')).toContainText(START_SERVED)
    await expectLook(page, look)

    // The dialog in this look: node2 is now taken by the model itself, and the actions fit the width.
    const again = await openPlaceOn(page)
    await expect(again.locator('li[data-node="node2"]')).toContainText(`taken by ${TARGET_SERVED}`)
    await expectLook(page, look)
    await again.getByRole('button', { name: 'Cancel' }).click()
    await openView(page, 'cluster')
  }
})

test('stops the placement on node2 from its card after Confirm; node1 keeps serving', async ({ page }) => {
  test.setTimeout(90_000)
  const look = LOOKS[0]!
  await useLook(page, look)
  await logIn(page)
  const node2 = placedOn(page, 'node2')
  await expect(node2.locator('[data-test="placement-model"]')).toContainText(TARGET_SERVED)
  await node2.getByRole('button', { name: 'Stop' }).click()
  const ask = node2.getByRole('alertdialog')
  await expect(ask).toContainText(`Stop ${TARGET_SERVED}`)
  await expectLook(page, look)
  await ask.getByRole('button', { name: 'Confirm' }).click()
  await expect(node2).toContainText('Nothing placed.', { timeout: 45_000 })
  await expect(placedOn(page, 'node1').locator('[data-test="placement-model"]')).toContainText(START_SERVED)
  const view = (await (await page.request.get('/api/placements', { headers: auth })).json()) as {
    placements: { id: string }[]
  }
  expect(view.placements.map((p) => p.id)).toEqual(['node1'])
})
