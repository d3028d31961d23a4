import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'
import { LOOKS, expectLook, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 46, items 3 and 4 (findings 3, 4 and 9's first half), in a demo of its own: a short swap is on
// the timeline from the job itself, in catalog keys; deep health probes at once after a restart, so the
// stale note goes; a node coming back says when it is checked again.
const PORT = Number(process.env.E2E_TIMELINE_PORT ?? 25_001)
/** The model the demo starts with and the one swapped to (test/sim/demoState.ts), both catalog keys. */
const START = 'qwen3-32b-fp8'
const TARGET = 'gemma4-26b-a4b-nvfp4'

// Probes far apart, as an unwatched daemon runs them: only the job itself can put the swap on the timeline.
const demo = useOwnDemo(PORT, 'e2e-timeline-data', {
  DEMO_LOAD_MS: '4000',
  MONITOR_INTERVAL_S: '120',
  DEEP_HEALTH_INTERVAL_S: '900',
})

async function api(path: string, body: unknown): Promise<Response> {
  return fetch(`http://127.0.0.1:${PORT}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${E2E_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

async function swapState(): Promise<{ swapping: unknown; loaded: { key: string | null } | null }> {
  const res = await fetch(`http://127.0.0.1:${PORT}/api/swap`, { headers: { authorization: `Bearer ${E2E_TOKEN}` } })
  return (await res.json()) as { swapping: unknown; loaded: { key: string | null } | null }
}

const events = (page: Page) => page.getByTestId('cluster-events')

test('a swap of about 10 s is on the timeline and in the events from the job, both models by catalog key', async ({
  page,
}) => {
  test.setTimeout(120_000)
  // No dashboard is open while it runs: no live probe can see the llm down.
  const started = Date.now()
  const res = await api(`/api/swap/${TARGET}`, { confirm_no_fit: true })
  expect(res.status, await res.clone().text()).toBe(200)
  await expect
    .poll(async () => (await swapState()).swapping === null && (await swapState()).loaded?.key, { timeout: 60_000 })
    .toBe(TARGET)
  expect(Date.now() - started).toBeLessThan(30_000)

  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'cluster')
  const reason = `planned swap: ${START} → ${TARGET}`
  for (const look of LOOKS) {
    await useLook(page, look)
    await page.reload()
    const down = events(page)
      .locator('tr', { hasText: reason })
      .filter({ hasText: /down \(planned\)/ })
    const up = events(page)
      .locator('tr', { hasText: reason })
      .filter({ hasText: /after \d+ s down/ })
    await expect(down).toHaveCount(1, { timeout: 15_000 })
    await expect(up).toHaveCount(1, { timeout: 15_000 })
    const seconds = Number(/after (\d+) s down/.exec((await up.textContent()) ?? '')?.[1])
    expect(seconds).toBeGreaterThanOrEqual(3)
    expect(seconds).toBeLessThan(30)
    // The llm's timeline row draws the planned period, named the same way.
    const llm = page.locator('.tl-row', { has: page.locator('.tl-name', { hasText: /^llm$/ }) })
    await expect(llm.locator('.tl-seg.planned')).toHaveAttribute('title', new RegExp(`^${reason} from `))
    await expectLook(page, look, down, up)
  }
})

test('after a restart, deep health probes at once and the stale note goes when that probe ends', async ({ page }) => {
  test.setTimeout(300_000)
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'services')
  const cardDeep = page.getByRole('article', { name: 'service asr' }).getByTestId('card-deep-health')
  const runNow = page.getByRole('button', { name: 'Run the asr probe now' })
  await runNow.click()
  await expect(runNow).toHaveText('Run now', { timeout: 60_000 })
  await expect(cardDeep).toContainText('ok', { timeout: 30_000 })
  for (const look of LOOKS) {
    await useLook(page, look)
    await demo.command('restart asr', 'docker restart asr: done')
    await page.reload()
    // The probe that follows the restart ends within seconds; its result is not from before it came up.
    await expect(cardDeep).toContainText('ok', { timeout: 45_000 })
    await expect(cardDeep).not.toContainText('probing again', { timeout: 45_000 })
    await expectLook(page, look, cardDeep)
  }
})

test('a node coming back says when it is checked again, and the outage is measured from the first failed probe', async ({
  page,
}) => {
  test.setTimeout(150_000)
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'cluster')
  const node2 = page.locator('.tl-row', { has: page.locator('.tl-name', { hasText: /^node2$/ }) })
  const hint = node2.getByRole('status')
  const downAt = Date.now()
  await demo.command('down node2', 'node2 down')
  await expect(node2.locator('.badge')).toHaveText('down', { timeout: 40_000 })
  for (const look of LOOKS) {
    await useLook(page, look)
    await expect(hint).toContainText(/node2 did not answer the last attempt; checking again (in \d+ s|now)/)
    const s = Number(/in (\d+) s/.exec((await hint.textContent()) ?? '')?.[1] ?? 0)
    expect(s).toBeLessThanOrEqual(25)
    await expectLook(page, look, hint)
  }
  await demo.command('up node2', 'node2 up')
  const upAt = Date.now()
  // While its return is being confirmed the hint counts down to the real attempt, then node2 is up.
  await expect(node2.locator('.badge')).toHaveText('up', { timeout: 60_000 })
  await expect(hint).toHaveCount(0)
  const seenUp = Date.now()
  const back = events(page)
    .locator('tr', { hasText: 'node2' })
    .filter({ hasText: /after \d+ s down/ })
    .first()
  const text = (await back.textContent()) ?? ''
  const down = Number(/after (\d+) s down/.exec(text)?.[1])
  // From the first failed probe to the attempt that found it back: never more than the time it took to see it.
  expect(down).toBeLessThanOrEqual(Math.ceil((seenUp - downAt) / 1000) + 1)
  expect(down).toBeGreaterThanOrEqual(Math.floor((upAt - downAt) / 1000) - 9)
  await expect(back).toContainText(/back within \d+ s after the last failed attempt/)
})
