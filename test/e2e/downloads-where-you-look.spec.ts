import { expect, test, type Locator, type Page } from '@playwright/test'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 46 item 6, downloads from where you look: a card whose weights are not on node2 offers
// "Download to node2" and shows that download's progress, rate and ETA mid-way; the Downloads form
// picks a catalog model. This spec runs its own demo (a download changes node2's disk) with the
// simulated network at 1000 MB/s, so gpt-oss 120B's 65 GB take about a minute.
const PORT = 24_001
/** On node1 only in the demo (test/sim/demoState.ts DEMO_NODE1_ONLY); 65.3 GB of weights. */
const TARGET = 'gpt-oss-120b'
const OTHER_REPO = 'cyankiwi/GLM-4.7-Flash-AWQ-4bit'

useOwnDemo(PORT, 'e2e-downloads-data', { DEMO_DOWNLOAD_MBPS: '1000' })

const card = (page: Page, key: string): Locator => page.locator(`article.model[data-key="${key}"]`)

async function openDownloads(page: Page): Promise<Locator> {
  await page.getByRole('button', { name: 'Downloads' }).click()
  const form = page.getByRole('form', { name: 'Start a download' })
  await expect(form).toBeVisible()
  return form
}

test(`the Downloads form picks a catalog model and a node without it; a typed repo still works (${LOOKS.map(lookName).join(', ')})`, async ({
  page,
}) => {
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'models')
  for (const look of LOOKS) {
    await useLook(page, look)
    await page.reload()
    const form = await openDownloads(page)
    const picker = form.locator('#dl-catalog')
    await expect(picker).toBeInViewport()
    await expect(picker.locator('option', { hasText: 'GLM-4.7 Flash' })).toHaveText(/on node1$/)
    await picker.selectOption({
      label: (await picker.locator('option', { hasText: 'GLM-4.7 Flash' }).innerText()).trim(),
    })
    await expect(form.locator('#dl-repo')).toHaveValue(OTHER_REPO)
    // node1 has it already: the target moves to the node that lacks it.
    await expect(form.locator('#dl-target')).toHaveValue('node2')
    await expect(form.getByRole('button', { name: 'Download', exact: true })).toBeEnabled()
    // An uncatalogued repo is typed as before; the picker lets go of its entry.
    await form.locator('#dl-repo').fill('someorg/uncatalogued-7b')
    await expect(picker).toHaveValue('')
    await expect(form.getByRole('button', { name: 'Download', exact: true })).toBeEnabled()
    await form.locator('#dl-repo').fill(OTHER_REPO.toLowerCase())
    await expect(picker.locator('option:checked')).toContainText('GLM-4.7 Flash')
    await expectLook(page, look, picker, form.locator('label').first())
  }
})

/** The progress bar's percent, once it shows one. */
async function percentOf(bar: Locator): Promise<number> {
  return Number(await bar.getAttribute('aria-valuenow'))
}

test(`a card's "Download to node2" shows the download's progress, rate and ETA mid-way in the card (${LOOKS.map(lookName).join(', ')})`, async ({
  page,
}) => {
  test.setTimeout(150_000)
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'models')
  const model = card(page, TARGET)
  await expect(model).toContainText('node2: not on disk')
  const button = model.getByRole('button', { name: 'Download to node2' })
  await button.scrollIntoViewIfNeeded()
  await button.click()

  // The progress takes the button's place, in view, with focus.
  const live = model.locator('[data-test="card-download-progress"]')
  await expect(live).toBeFocused()
  await expect(live).toBeInViewport()
  await expect(model.getByRole('button', { name: 'Download to node2' })).toHaveCount(0)

  const bar = live.getByRole('progressbar', { name: /Download progress of gpt-oss 120B/ })
  for (const look of LOOKS) {
    await useLook(page, look)
    await live.scrollIntoViewIfNeeded()
    await expect(live).toBeInViewport()
    await expect(live).toContainText('Downloading')
    await expect.poll(() => percentOf(bar), { timeout: 20_000 }).toBeGreaterThan(0)
    const pct = await percentOf(bar)
    expect(pct, `${lookName(look)}: mid-way`).toBeLessThan(100)
    // Percent, bytes of the model's size, the rate the simulated network moves, and time left.
    await expect(live.locator('.figures')).toHaveText(/^\d+\.\d% · [\d.]+ Gi?B of [\d.]+ Gi?B · [\d.]+ [MG]i?B\/s$/)
    await expect(live).toContainText(/about \d+[smh]( \d+[smh])? left/)
    await expectLook(page, look, live.locator('strong'), live.locator('.figures'))
  }
  // The same download is the Downloads panel's, and it can be stopped from the card.
  await live.getByRole('button', { name: 'Cancel download' }).click()
  await expect(live).toContainText('cancelled', { timeout: 20_000 })
  await expect(model.getByRole('button', { name: 'Download to node2' })).toBeVisible()
})
