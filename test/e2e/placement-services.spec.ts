import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { placementsIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook, type Look } from './looks'
import { startOwnDemo, type OwnDemo } from './ownDemo'

// Issue 46, "Every placement is a service": with two models placed (DEMO_PLACEMENTS=two on two
// nodes, the second solo on node2), node2's engine is the service llm@node2, named by its placement,
// with its own row in the Cluster services table and its own card in Services (state, health,
// Restart, Logs), beside node1's llm.
const PORT = Number(process.env.E2E_PLACEMENT_SERVICES_PORT ?? 21_001)
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** The demo's second placement (test/sim/demoState.ts, DEMO_PLACEMENTS=two). */
const ON_NODE2 = 'nvidia/Gemma-4-26B-A4B-NVFP4'

let demo: OwnDemo

test.describe.configure({ mode: 'serial' })
test.use({ baseURL: `http://127.0.0.1:${PORT}` })

test.beforeAll(async () => {
  test.setTimeout(120_000)
  demo = await startOwnDemo(PORT, 'e2e-placement-services-data', { DEMO_PLACEMENTS: 'two', DEMO_LOAD_MS: '3000' })
  await demo.printed('Placements:  placing')
})

test.afterAll(async () => {
  await demo?.stop()
})

/** Both placements ready, and the status has node2's engine as a Healthy service. */
async function twoPlaced(page: Page): Promise<void> {
  await placementsIdle(page)
  await expect
    .poll(
      async () => {
        const st = (await (await page.request.get('/api/status', { headers: auth })).json()) as {
          placements: { name: string; label: string }[]
        }
        return st.placements.map((p) => `${p.name} ${p.label}`)
      },
      { timeout: 60_000 },
    )
    .toEqual(['llm@node2 Healthy'])
}

async function expectClusterRows(page: Page, look: Look): Promise<void> {
  await openView(page, 'cluster')
  const table = page.getByTestId('cluster-services')
  const rows = table.locator('tbody tr')
  await expect(rows.locator('td[data-label="Service"] .mono')).toHaveText(['llm', 'llm@node2', 'asr', 'tts'], {
    timeout: 20_000,
  })
  const engine = rows.nth(1)
  await expect(engine.getByTestId('service-placement')).toContainText(ON_NODE2)
  await expect(engine.getByTestId('service-placement')).toContainText('on node2, solo')
  await expect(engine.locator('td[data-label="Status"]')).toContainText('Healthy')
  await expect(engine.locator('td[data-label="Model"]')).toHaveText(ON_NODE2)
  // A placement is started and stopped as a placement: its row offers Restart only.
  await expect(engine.getByRole('button', { name: 'Restart' })).toBeVisible()
  await expect(engine.getByRole('button', { name: 'Stop', exact: true })).toHaveCount(0)
  await expect(rows.nth(0).getByRole('button', { name: 'Stop', exact: true })).toBeVisible()
  await expectLook(page, look, engine.locator('td[data-label="Service"]'), engine.locator('td[data-label="Status"]'))
}

async function expectServiceCard(page: Page, look: Look): Promise<void> {
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service llm@node2' })
  await expect(card).toBeVisible({ timeout: 20_000 })
  await expect(page.getByRole('article', { name: 'service llm', exact: true })).toBeVisible()
  await expect(card.getByTestId('service-placement')).toHaveText(
    /^nvidia\/Gemma-4-26B-A4B-NVFP4 (\(.+\) )?on node2, solo$/,
  )
  await expect(card.locator('header .badge').first()).toHaveText('Healthy')
  await expect(card).toContainText('OK in')
  await expect(card.getByRole('button', { name: 'Restart' })).toBeVisible()
  await expect(card.getByRole('button', { name: 'Start', exact: true })).toHaveCount(0)
  await card.getByRole('button', { name: 'Logs' }).click()
  await expect(card.locator('pre.log')).toBeVisible()
  await expect(card.locator('pre.log')).not.toHaveText('(no output)')
  await expectLook(page, look, card.getByTestId('service-placement'), card.locator('header .badge').first())
}

for (const look of LOOKS) {
  test(`two placements are two services in Cluster and in Services (${lookName(look)})`, async ({ page }) => {
    // The first waits for node2's placement to load; a busy machine is slow to draw.
    test.setTimeout(150_000)
    await useLook(page, look)
    await logIn(page)
    await twoPlaced(page)
    await expectClusterRows(page, look)
    await expectServiceCard(page, look)
  })
}

test("Restart of node2's engine places it again on node2 and it comes back Healthy", async ({ page }) => {
  test.setTimeout(150_000)
  await useLook(
    page,
    LOOKS.find((l) => l.width === 1440 && l.theme === 'light')!,
  )
  await logIn(page)
  await twoPlaced(page)
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service llm@node2' })
  await card.getByRole('button', { name: 'Restart' }).click()
  await expect(card.getByRole('alertdialog')).toContainText('is placed again on node2, solo')
  await card.getByRole('button', { name: 'Confirm' }).click()
  await expect(card.getByRole('status').last()).toContainText(/restart: started .*re-placing it on node2 \(job /)
  await twoPlaced(page)
  await expect(card.locator('details summary')).toHaveText('Recent changes')
})
