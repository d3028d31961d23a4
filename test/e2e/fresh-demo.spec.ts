import { expect, test, type Page } from '@playwright/test'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook } from './looks'
import { useOwnDemo } from './ownDemo'

// Issue 46 #5: a fresh demo looks healthy. Its asr starts as a set-up cluster's does, with the
// speech overlays applied, so the Services view opens without an alarm: nothing error-coloured,
// the overlays read as in sync, and Restart asr is an ordinary button.
const PORT = Number(process.env.E2E_FRESH_DEMO_PORT ?? 26_001)

useOwnDemo(PORT, 'e2e-fresh-demo-data')

/**
 * Runs in the page (passed as source): the visible elements of the main view painted in the
 * error colour (--bad) as text, fill or border, except buttons of destructive actions (Stop,
 * Remove), which are red by design and ask before they act.
 */
function redElements(): string[] {
  type El = {
    tagName: string
    textContent: string | null
    getBoundingClientRect(): { width: number; height: number }
  }
  type Styled = { color: string; backgroundColor: string; borderTopColor: string; visibility: string }
  const g = globalThis as unknown as {
    getComputedStyle(el: unknown): Styled
    document: {
      createElement(tag: string): { style: { color: string } }
      body: { appendChild(el: unknown): void; removeChild(el: unknown): void }
      querySelectorAll(selector: string): ArrayLike<El>
    }
  }
  const probe = g.document.createElement('span')
  probe.style.color = 'var(--bad)'
  g.document.body.appendChild(probe)
  const bad = g.getComputedStyle(probe).color
  g.document.body.removeChild(probe)
  const destructive = /^(Stop|Remove)$/
  const out: string[] = []
  for (const el of Array.from(g.document.querySelectorAll('main *'))) {
    const r = el.getBoundingClientRect()
    const s = g.getComputedStyle(el)
    if (r.width === 0 || r.height === 0 || s.visibility === 'hidden') continue
    const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ')
    if (el.tagName === 'BUTTON' && destructive.test(text)) continue
    if ([s.color, s.backgroundColor, s.borderTopColor].includes(bad))
      out.push(`${el.tagName.toLowerCase()} "${text.slice(0, 60)}"`)
  }
  return out
}

async function expectNoRed(page: Page): Promise<void> {
  // Re-read until the panels have settled: a list still loading has nothing red yet either.
  await expect.poll(() => page.evaluate(redElements as unknown as () => string[]), { timeout: 10_000 }).toEqual([])
}

test('a fresh demo: Services without red, the speech overlays applied', async ({ page }) => {
  test.setTimeout(120_000)
  await logIn(page)
  await openView(page, 'services')
  const patches = page.locator('.speech-patches')
  // One read over SSH; on a loaded machine it can time out, and then Check again reads anew.
  await expect(async () => {
    if (!(await patches.getByText('All overlays in sync').isVisible()))
      await patches.getByRole('button', { name: 'Check again' }).click()
    await expect(patches.getByTestId('patches-summary')).toHaveText('All overlays in sync', { timeout: 10_000 })
  }).toPass({ timeout: 40_000 })
  await expect(patches.locator('tbody tr')).toHaveCount(3)
  for (const row of await patches.locator('tbody tr').all()) await expect(row.locator('.badge')).toHaveText('in sync')
  await expect(page.getByRole('heading', { name: 'Services', level: 2 })).toBeVisible()
  for (const look of LOOKS) {
    await test.step(lookName(look), async () => {
      await useLook(page, look)
      await expectLook(page, look)
      await expectNoRed(page)
      const restart = patches.getByRole('button', { name: 'Restart asr' })
      await expect(restart).toBeVisible()
      await expect(restart).not.toHaveClass(/danger/)
    })
  }
})
