import fs from 'node:fs'
import path from 'node:path'
import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { placementsIdle, swapIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 31, "Screenshots": the console in the states an operator meets (a failed probe, a swap in
// progress, two models placed at once, a node down), for the README. One demo of its own, with two
// placements, serves them all in turn; every picture is taken only once its state is asserted on screen.
const PORT = Number(process.env.E2E_STATES_PORT ?? 19_983)
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
// `npm run screenshots` writes into docs/screenshots; the suite writes into test-results.
const OUT = process.env.SCREENSHOTS_DIR ?? 'test-results/screenshots'
/** The demo's second placement, beside node1's model (test/sim/demoState.ts, DEMO_PLACEMENTS=two). */
const ON_NODE2 = 'nvidia/Gemma-4-26B-A4B-NVFP4'
/** A solo catalog model not loaded at start: its first load's ETA is an estimate from the weights' size. */
const SWAP_TO = 'qwen3-coder-30b-a3b-fp8'
const SWAPPED_TO = 'Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8'
const DESKTOP = LOOKS.find((l) => l.width === 1440 && l.theme === 'light')!
const DESKTOP_DARK = LOOKS.find((l) => l.width === 1440 && l.theme === 'dark')!
const PHONE = LOOKS.find((l) => l.width === 390 && l.theme === 'light')!

// Loads long enough to catch a swap mid-load with its ETA counting down, short enough to wait out one.
const demo = useOwnDemo(
  PORT,
  'e2e-states-data',
  { DEMO_PLACEMENTS: 'two', DEMO_LOAD_MS: '6000' },
  { ready: 'Placements:  placing' },
)

/**
 * Pictures the page once `state` holds on screen, and checks it again after: a state that moved on
 * while the picture was taken fails the test instead of leaving a wrong picture behind.
 */
async function shoot(page: Page, name: string, state: () => Promise<void>, fullPage = true): Promise<void> {
  await state()
  fs.mkdirSync(OUT, { recursive: true })
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage })
  await state()
}

async function refresh(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Refresh' }).first().click()
}

test('failed-probe: a wedged asr, its deep-health row and its card both failed @screenshot', async ({ page }) => {
  await useLook(page, DESKTOP)
  await logIn(page)
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service asr' })
  const badge = card.locator('.badge').first()
  const row = page.locator('tr[data-service="asr"]')
  const runNow = page.getByRole('button', { name: 'Run the asr probe now' })
  await expect(badge).toHaveText('Healthy')
  // The daemon has just started: its 60 s grace holds deep health's own restart back, so the wedge stays to be seen.
  await demo.command('wedge asr', 'asr wedged')
  // /health still answers OK; the probe finds it wedged, and the card says so with the row.
  await runNow.click()
  await shoot(page, 'failed-probe', async () => {
    await expect(row.locator('.badge').first()).toHaveText('wedged')
    await expect(badge).toHaveText('Unhealthy (deep health: wedged)')
    await expect(card.getByTestId('card-deep-health')).toHaveText(/^wedged · /)
    await expect(card).toContainText('cudaErrorUnknown')
    await expectLook(page, DESKTOP, badge, row.locator('.badge').first())
  })

  // A restart clears the wedge for the states after this one.
  await demo.command('restart asr', 'docker restart asr: done')
  await refresh(page)
  await expect(badge).toHaveText('Healthy', { timeout: 25_000 })
  await expect(row.locator('.badge').first()).toHaveText('ok', { timeout: 25_000 })
})

test('swap-in-progress: the Models view mid-load, its ETA counting down @screenshot', async ({ page }) => {
  await useLook(page, DESKTOP)
  await logIn(page)
  // The demo's second placement loads first: a swap waits for no other placement job.
  await placementsIdle(page)
  const started = await page.request.post(`/api/swap/${SWAP_TO}`, { headers: auth, data: {} })
  expect(started.status(), await started.text()).toBe(200)
  await openView(page, 'models')
  const bar = page.locator('.loaded-bar')
  const progress = page.locator('section[aria-label="Swap progress"]')
  const eta = page.locator('[data-test="swap-eta"]')
  await expect(progress.locator('.phases li.now')).toHaveText('Loading', { timeout: 20_000 })
  await shoot(
    page,
    'swap-in-progress',
    async () => {
      await expect(bar).toContainText('swapping')
      await expect(bar).toContainText(`also ${ON_NODE2}`)
      await expect(bar).not.toContainText('lost')
      await expect(progress.locator('.phases li.now')).toHaveText('Loading')
      await expect(eta).toContainText(/about \d+s left/)
      await expectLook(page, DESKTOP, bar, eta)
    },
    false,
  )
})

test('placements: two models placed at once, one per node, in light and dark @screenshot', async ({ page }) => {
  await useLook(page, DESKTOP)
  await logIn(page)
  await swapIdle(page)
  await placementsIdle(page)
  for (const [look, name] of [
    [DESKTOP, 'placements'],
    [DESKTOP_DARK, 'placements-dark'],
  ] as const) {
    await useLook(page, look)
    await page.reload()
    await shoot(page, name, async () => {
      for (const [node, served] of [
        ['node1', SWAPPED_TO],
        ['node2', ON_NODE2],
      ] as const) {
        const placed = page.locator(`section[aria-label="Placed on ${node}"]`)
        await expect(placed.locator('[data-test="placement-model"]')).toContainText(served)
        await expect(placed.locator('[data-test="placement-state"]')).toHaveText('ready')
        await expect(
          page
            .getByRole('article', { name: `${node} hardware` })
            .locator('.badge')
            .first(),
        ).toHaveText('up')
      }
      await expectLook(page, look)
    })
  }
})

test('node-down: node2 unreachable, its services Unknown (node unreachable), at 1440 and 390 px @screenshot', async ({
  page,
}) => {
  await useLook(page, DESKTOP)
  await logIn(page)
  await demo.command('down node2', 'node2 down')
  // The services list reuses a container inspection for 2 s: look again once that is past.
  await page.waitForTimeout(2500)
  await page.reload()
  const node2 = page.getByRole('article', { name: 'node2 hardware' }).locator('.badge').first()
  const services = page.getByTestId('cluster-services')
  await expect(node2).toHaveText('unreachable', { timeout: 20_000 })
  await shoot(page, 'node-down', async () => {
    await expect(node2).toHaveText('unreachable')
    for (const name of ['asr', 'tts'])
      await expect(services.locator('tr', { hasText: name }).locator('.badge')).toHaveText(
        'Unknown (node unreachable)',
        { timeout: 15_000 },
      )
    // node1's llm keeps serving; the second placement, on node2, is its own row and cannot be read either.
    await expect(services.locator('tr', { hasText: /^\s*llm(?!@)/ }).locator('.badge')).toHaveText('Healthy')
    await expect(services.locator('tr', { hasText: 'llm@node2' }).locator('.badge')).toHaveText(
      'Unknown (node unreachable)',
    )
    await expectLook(page, DESKTOP)
  })

  // On a phone, the Services view: the asr card with its reason.
  await useLook(page, PHONE)
  await openView(page, 'services')
  const asr = page.getByRole('article', { name: 'service asr' })
  await expect(asr.locator('.badge').first()).toHaveText('Unknown (node unreachable)', { timeout: 15_000 })
  await asr.scrollIntoViewIfNeeded()
  await shoot(
    page,
    'node-down-phone',
    async () => {
      await expect(asr.locator('.badge').first()).toHaveText('Unknown (node unreachable)')
      await expect(asr.getByRole('note')).toContainText('node2 is unreachable over SSH')
      await expect(asr.getByRole('note')).toBeInViewport()
      await expectLook(page, PHONE, asr.locator('.badge').first(), asr.getByRole('note'))
    },
    false,
  )
  await demo.command('up node2', 'node2 up')
})
