import { expect, test, type Locator, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'
import { LOOKS, WIDTHS, expectLook, lookName, openView, useLook } from './looks'

/**
 * One truth for memory and the small things seen (issue 46, items 8 and 10), measured from element
 * boxes and text, at 390 and 1440 px, light and dark where the issue asks.
 */
const auth = { authorization: `Bearer ${E2E_TOKEN}` }

/** "90.2 GB" → 90.2 (the console writes sizes in decimal GB, one decimal). */
function gb(text: string): number {
  const m = /([\d.]+)\s*(B|KB|MB|GB|TB)\b/.exec(text)
  if (!m) throw new Error(`no size in "${text}"`)
  const scale: Record<string, number> = { B: 1e-9, KB: 1e-6, MB: 1e-3, GB: 1, TB: 1e3 }
  return Number(m[1]) * (scale[m[2] as string] as number)
}

async function bytesOf(l: Locator): Promise<number> {
  return Number(await l.getAttribute('data-bytes'))
}

test('a unified-memory node shows one pool that adds up, and the placement agrees with it', async ({ page }) => {
  test.setTimeout(120_000)
  await logIn(page)
  const node1 = page.getByRole('article', { name: 'node1 hardware' })
  const pool = node1.locator('[data-test="memory-pool"]')
  await expect(pool).toBeVisible({ timeout: 30_000 })
  // The demo's node1 runs an engine: wait until its placement is shown as ready with its reservation.
  await expect(node1.locator('[data-test="placement-memory"]')).toHaveAttribute('data-bytes', /\d/, {
    timeout: 45_000,
  })
  for (const look of LOOKS) {
    await test.step(lookName(look), async () => {
      await useLook(page, look)
      await expectLook(page, look, pool)
      const part = (k: string) => pool.locator(`[data-test="pool-${k}"]`)
      const [engine, other, free] = [
        await bytesOf(part('engine')),
        await bytesOf(part('other')),
        await bytesOf(part('free')),
      ]
      const total = await bytesOf(pool.locator('[data-test="pool-total"]'))
      expect(engine + other + free, 'engine + other + free = total (bytes)').toBe(total)
      // As shown: the three shown figures add up to the shown total, within their rounding.
      const texts = await Promise.all(['engine', 'other', 'free'].map((k) => part(k).innerText()))
      const totalText = (await pool.locator('[data-test="pool-total"]').innerText()).split(' of ')[1] as string
      const shown = texts.map(gb)
      const slack = [...texts, totalText].reduce((sum, t) => sum + (/\.\d/.test(t) ? 0.05 : 0.5), 0)
      expect(Math.abs(shown.reduce((a, b) => a + b, 0) - gb(totalText))).toBeLessThanOrEqual(slack + 1e-9)
      // Shown once: no RAM meter or GPU memory meter beside the pool.
      await expect(node1.getByText(/^RAM$/)).toHaveCount(0)
      await expect(node1.getByText(/^GPU memory/)).toHaveCount(0)
      // The placement's words are the pool's figures: what it reserves is what the engine holds,
      // and "other processes hold" is the pool's other part.
      const reserves = node1.locator('[data-test="placement-memory"]')
      expect(Math.abs((await bytesOf(reserves)) - engine), 'reserves = engine (within 1 MiB)').toBeLessThanOrEqual(
        2 ** 20,
      )
      expect(gb(await reserves.innerText())).toBe(shown[0])
      const others = node1.locator('[data-test="placement-other"]')
      expect(await bytesOf(others)).toBe(other)
      expect(gb(await others.innerText())).toBe(shown[1])
      // One unit on the page: nothing in GiB, the chart's axis and legend in GB.
      expect(await page.locator('main').innerText()).not.toMatch(/GiB|MiB/)
    })
  }
  const chart = page.locator('figure.chart', { hasText: 'node1 memory in use' })
  await expect(chart).toBeVisible({ timeout: 45_000 })
  await chart.locator('.u-over').hover()
  await expect(chart.locator('.u-legend')).toContainText(/\d+(\.\d)? GB/)
  await expect(chart.locator('.u-legend')).not.toContainText('GiB')
})

/** Just enough of the DOM for the in-page functions (the node tsconfig has no DOM library). */
interface Box {
  top: number
  right: number
}
interface TextNode {
  nodeType: number
  textContent: string | null
}
interface Range {
  setStart(n: TextNode, at: number): void
  setEnd(n: TextNode, at: number): void
  selectNodeContents(n: unknown): void
  getClientRects(): ArrayLike<Box>
}
interface El {
  firstChild: TextNode | null
  textContent: string | null
}
/** Runs in the page: for each element, any of its words (runs between / and -) split over two lines. */
function splitWords(els: El[]): string[] {
  const doc = (globalThis as unknown as { document: { createRange(): Range } }).document
  const out: string[] = []
  for (const el of els) {
    const text = el.firstChild
    if (!text || text.nodeType !== 3) continue
    const s = text.textContent ?? ''
    const re = /[^/\-\s]+/g
    let m: RegExpExecArray | null
    while ((m = re.exec(s)) !== null) {
      const r = doc.createRange()
      r.setStart(text, m.index)
      r.setEnd(text, m.index + m[0].length)
      if (new Set(Array.from(r.getClientRects()).map((b) => Math.round(b.top))).size > 1) out.push(`${s}: "${m[0]}"`)
    }
  }
  return out
}

/** Runs in the page: elements whose text takes more than one line. */
function wrapped(els: El[]): string[] {
  const doc = (globalThis as unknown as { document: { createRange(): Range } }).document
  return els
    .filter((el) => {
      const r = doc.createRange()
      r.selectNodeContents(el)
      return new Set(Array.from(r.getClientRects()).map((b) => Math.round(b.top))).size > 1
    })
    .map((el) => (el.textContent ?? '').trim())
}

async function licenseWithValidation(page: Page): Promise<string> {
  const request = page.request
  const found = (await (await request.get('/v1/admin/products?q=notes', { headers: auth })).json()) as {
    products: { id: string; slug: string }[]
  }
  const product = found.products.find((p) => p.slug === 'notes')!
  const issued = await request.post('/v1/admin/licenses', {
    headers: auth,
    data: { product_id: product.id, buyer_email: 'from-column@example.com' },
  })
  const { license, license_key } = (await issued.json()) as { license: { id: string }; license_key: string }
  await request.post('/v1/machines/activate', {
    headers: {
      'user-agent': `NotesDesktop/4.12.0 (X11; Linux x86_64; ${'a-long-build-tag-'.repeat(6)}) Electron/33.2.1`,
    },
    data: {
      key: license_key,
      fingerprint: 'from-column-machine-0123456789abcdef',
      hostname: 'ws',
      platform: 'linux-x86_64',
    },
  })
  return license.id
}

for (const width of WIDTHS) {
  test(`small things at ${width} px: words, buttons, columns, legends, stat cards`, async ({ page }) => {
    test.setTimeout(150_000)
    const licenseId = await licenseWithValidation(page)
    await page.setViewportSize({ width, height: width < 900 ? 844 : 900 })
    await logIn(page)

    // A chart's hover legend stays above the next chart's heading (both boxes read in one go).
    const charts = page.locator('.grid.charts figure.chart')
    await expect(charts.nth(1)).toBeVisible({ timeout: 45_000 })
    await charts.nth(0).locator('.u-over').hover()
    await expect(charts.nth(0).locator('.u-legend')).toBeVisible()
    const gap = await page.evaluate(`(() => {
      const [a, b] = document.querySelectorAll('.grid.charts figure.chart')
      return b.querySelector('figcaption').getBoundingClientRect().top - a.querySelector('.u-legend').getBoundingClientRect().bottom
    })()`)
    expect.soft(Number(gap), 'legend bottom above the next heading').toBeGreaterThanOrEqual(-0.5)

    // Repo links break between words (at / and -), never inside one.
    await openView(page, 'models')
    const repos = page.locator('article.model .src a')
    await expect(repos.first()).toBeVisible()
    expect.soft(await repos.evaluateAll(splitWords as unknown as (els: unknown[]) => string[])).toEqual([])

    // Deep health's "Run now" keeps its words on one line.
    await openView(page, 'services')
    const runNow = page.getByRole('button', { name: /^Run the \w+ probe now$/ })
    await expect(runNow.first()).toBeVisible({ timeout: 20_000 })
    const oneLine = wrapped as unknown as (els: unknown[]) => string[]
    expect.soft(await runNow.evaluateAll(oneLine)).toEqual([])
    expect.soft(await page.locator('td[data-label="Auto-restart"] .badge').evaluateAll(oneLine)).toEqual([])

    // Four stat cards: every row holds as many as the first.
    await openView(page, 'licensing')
    const stats = page.locator('.card', { has: page.locator('.big') })
    await expect(stats).toHaveCount(4)
    const tops = await stats.evaluateAll((els) =>
      els.map((e) => Math.round((e as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect().top)),
    )
    const perRow = [...new Set(tops)].map((t) => tops.filter((x) => x === t).length)
    expect.soft(new Set(perRow).size, `cards per row: ${perRow.join(', ')}`).toBe(1)

    // The license detail's From column stays inside its card.
    await page.goto('/#/licensing?tab=licenses')
    await page.getByRole('button', { name: licenseId.slice(0, 8) }).click()
    const log = page.locator('table', { has: page.locator('th', { hasText: /^From$/ }) }).last()
    await expect(log).toBeVisible({ timeout: 20_000 })
    const inside = await log.evaluate((el) => {
      type Boxed = { getBoundingClientRect(): Box }
      const table = el as unknown as Boxed & {
        closest(s: string): Boxed
        querySelectorAll(s: string): ArrayLike<Boxed>
        scrollWidth: number
        clientWidth: number
      }
      const card = table.closest('.card').getBoundingClientRect()
      const cells = Array.from(table.querySelectorAll('td, th')).map((c) => c.getBoundingClientRect().right)
      return { card: card.right, widest: Math.max(...cells), scroll: table.scrollWidth, client: table.clientWidth }
    })
    expect.soft(inside.widest, 'cells end inside the card').toBeLessThanOrEqual(inside.card + 0.5)
    expect.soft(inside.scroll, 'the table does not scroll sideways').toBeLessThanOrEqual(inside.client + 1)
  })
}

test('focus after logging in stays in order, and Log out puts it in the token field', async ({ page }) => {
  await page.goto('/#/login')
  await page.getByTestId('token').fill(E2E_TOKEN)
  await page.getByTestId('login-submit').click()
  await expect(page).toHaveURL(/#\/cluster/)
  // At once (within 1.5 s): Tab must not skip the page to the SSH key summary at its foot.
  await page.keyboard.press('Tab')
  expect
    .soft(await page.evaluate('document.activeElement && document.activeElement.tagName.toLowerCase()'))
    .not.toBe('summary')
  await page.getByTestId('logout').click()
  await expect(page.getByTestId('logged-out')).toBeVisible()
  await expect(page.getByTestId('token')).toBeFocused()
})
