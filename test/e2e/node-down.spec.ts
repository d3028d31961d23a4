import { expect, test, type Page } from '@playwright/test'
import { logIn } from './login'
import { LOOKS, WIDTHS, expectLook, looksAt, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 31, findings 3 and 4, from the demo's own terminal commands, at both widths in both themes. This spec runs its own demo
// (the shared one takes no commands) on another loopback port, typing into its stdin as an
// operator would.
const PORT = Number(process.env.E2E_NODE_DOWN_PORT ?? 19_987)

const demo = useOwnDemo(PORT, 'e2e-node-down-data')

async function refresh(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Refresh' }).first().click()
}

test('a fault on asr, in every look: the card and the deep-health row fail together, recover together, and a probe agrees', async ({
  page,
}) => {
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service asr' })
  const row = page.locator('tr[data-service="asr"]')
  const runNow = page.getByRole('button', { name: 'Run the asr probe now' })
  await expect(card.locator('.badge').first()).toHaveText('Healthy')

  for (const look of LOOKS) {
    await useLook(page, look)
    await demo.command('fault asr error500', 'asr fault error500')
    await refresh(page)
    await expect(card.locator('.badge').first()).toHaveText('Unhealthy')
    // No "Run now": the card turning Unhealthy starts the probe.
    await expect(row.locator('.badge').first()).toHaveText(/wedged|failing/)
    // A probe run by hand finds the same.
    await runNow.click()
    await expect(runNow).toHaveText('Run now')
    await expect(row.locator('.badge').first()).toHaveText(/wedged|failing/)
    await expect(card.locator('.badge').first()).toHaveText('Unhealthy')
    await expectLook(page, look, card.locator('.badge').first(), row.locator('.badge'))

    await demo.command('fault asr none', 'asr fault none')
    await refresh(page)
    await expect(card.locator('.badge').first()).toHaveText('Healthy')
    await expect(row.locator('.badge').first()).toHaveText('ok')
    await runNow.click()
    await expect(runNow).toHaveText('Run now')
    await expect(row.locator('.badge').first()).toHaveText('ok')
    await expect(card.locator('.badge').first()).toHaveText('Healthy')
    await expectLook(page, look, card.locator('.badge').first(), row.locator('.badge').first())
  }
})

test('node2 down, in every look: asr and tts are Unknown (node unreachable) with their actions disabled and the reason shown', async ({
  page,
}) => {
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'services')
  await demo.command('down node2', 'node2 down')
  // The services list reuses a container inspection for 2 s: look again once that is past.
  await page.waitForTimeout(2500)
  await refresh(page)
  for (const look of LOOKS) {
    // What a reload shows, in each look: the same state, from the daemon.
    await useLook(page, look)
    await page.reload()
    for (const name of ['asr', 'tts']) {
      const card = page.getByRole('article', { name: `service ${name}` })
      await expect(card.locator('.badge').first()).toHaveText('Unknown (node unreachable)', { timeout: 15_000 })
      for (const action of ['Start', 'Restart', 'Stop'])
        await expect(card.getByRole('button', { name: action, exact: true })).toBeDisabled()
      await expect(card.getByRole('note')).toContainText('node2 is unreachable over SSH')
    }
    // The llm on node1 is untouched.
    await expect(page.getByRole('article', { name: 'service llm' }).locator('.badge').first()).toHaveText('Healthy')
    const node2 = page.getByRole('article', { name: /service (asr|tts)/ })
    await expectLook(page, look, node2.locator('.badge'), node2.getByRole('note'))
  }
  await demo.command('up node2', 'node2 up')
})

test('a wedged asr at both widths: the card shows the probe that found it wedged, and after a restart both read ok', async ({
  page,
}) => {
  test.setTimeout(150_000)
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service asr' })
  const badge = card.locator('.badge').first()
  const cardDeep = card.getByTestId('card-deep-health')
  const row = page.locator('tr[data-service="asr"]')
  const runNow = page.getByRole('button', { name: 'Run the asr probe now' })

  for (const width of WIDTHS) {
    const look = looksAt(width)[0]!
    await useLook(page, look)
    // A fresh container start holds deep health's own restart back (its 60 s grace), so the wedge stays for us to see.
    await demo.command('restart asr', 'docker restart asr: done')
    await demo.command('wedge asr', 'asr wedged')
    // /health still answers OK; the probe finds it wedged, and the card says so with the row. The
    // restart itself has deep health probe at once: that probe finds the wedge, unless it ran before
    // the wedge (or while the daemon still remembered node2 as unreachable after the previous test's
    // `up node2`, spec 1, section 8: 25 s), and then Run now does.
    await expect
      .poll(
        async () => {
          await refresh(page)
          const text = (await badge.textContent())?.trim()
          if (text === 'Healthy' && (await runNow.isEnabled())) await runNow.click()
          return text
        },
        { timeout: 45_000, intervals: [2_000] },
      )
      .toBe('Unhealthy (deep health: wedged)')
    await expect(row.locator('.badge').first()).toHaveText('wedged')
    await expect(badge).toHaveText('Unhealthy (deep health: wedged)')
    await expect(cardDeep).toHaveText(/^wedged · /)
    await expect(card).toContainText('cudaErrorUnknown')
    await expectLook(page, look, badge, row.locator('.badge').first())

    // The operator's restart clears the wedge: the card turns Healthy and deep health probes at once (no Run now).
    await card.getByRole('button', { name: 'Restart', exact: true }).click()
    await card.getByRole('button', { name: 'Confirm', exact: true }).click()
    await expect(badge).toHaveText('Healthy', { timeout: 25_000 })
    await expect(row.locator('.badge').first()).toHaveText('ok', { timeout: 25_000 })
    await expect(cardDeep).toHaveText(/^ok · /)
    await expectLook(page, look, badge, row.locator('.badge').first())
  }
})
