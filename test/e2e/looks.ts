import { expect, type Locator, type Page } from '@playwright/test'

/**
 * The widths and themes a person meets the console and the shop in (issue 31): a phone and a
 * desktop, light and dark. Specs switch between them inside one page, so one demo serves them all.
 */
export interface Look {
  width: number
  height: number
  theme: 'light' | 'dark'
}

export const WIDTHS = [390, 1440] as const

export const LOOKS: readonly Look[] = WIDTHS.flatMap((width) =>
  (['light', 'dark'] as const).map((theme) => ({ width, height: width < 900 ? 844 : 900, theme })),
)

export function lookName(look: Look): string {
  return `${look.width} px ${look.theme}`
}

/**
 * Sets the viewport and the system's colour scheme. The dashboard (theme toggle on "system") and
 * the buyer pages both follow the scheme, live: no reload needed.
 */
export async function useLook(page: Page, look: Look): Promise<void> {
  await page.setViewportSize({ width: look.width, height: look.height })
  await page.emulateMedia({ colorScheme: look.theme })
}

/** Runs in the page (passed as source): the page's background and its main heading's text colour. */
function paint(): { background: string; text: string } {
  type Styled = { backgroundColor: string; color: string; colorScheme: string }
  const g = globalThis as unknown as {
    getComputedStyle(el: unknown): Styled
    matchMedia(query: string): { matches: boolean }
    document: { documentElement: unknown; body: unknown; querySelector(s: string): unknown }
  }
  const doc = g.document
  const layers = [doc.body, doc.documentElement].map((el) => g.getComputedStyle(el).backgroundColor)
  // No background of its own: the browser's canvas, dark when the page takes the dark scheme.
  const darkCanvas =
    g.matchMedia('(prefers-color-scheme: dark)').matches &&
    g.getComputedStyle(doc.documentElement).colorScheme.includes('dark')
  const canvas = darkCanvas ? 'rgb(18, 18, 18)' : 'rgb(255, 255, 255)'
  const background = layers.find((c) => !/^rgba\(.*, 0\)$/.test(c) && c !== 'transparent') ?? canvas
  const heading = doc.querySelector('main h1') ?? doc.querySelector('h1') ?? doc.body
  return { background, text: g.getComputedStyle(heading).color }
}

/** 0 (black) to 1 (white), near enough to tell a dark page from a light one. */
function lightness(css: string): number {
  const [r, g, b] = (css.match(/[\d.]+/g) ?? ['0', '0', '0']).map(Number) as [number, number, number]
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
}

/** The page is painted in the look's theme, with its heading readable against the background. */
export async function expectTheme(page: Page, theme: Look['theme']): Promise<void> {
  const seen = await page.evaluate(paint as unknown as () => { background: string; text: string })
  const bg = lightness(seen.background)
  if (theme === 'dark') expect(bg, `background ${seen.background}`).toBeLessThan(0.3)
  else expect(bg, `background ${seen.background}`).toBeGreaterThan(0.7)
  expect(Math.abs(lightness(seen.text) - bg), `heading ${seen.text} on ${seen.background}`).toBeGreaterThan(0.4)
}

/** Runs in the page: the document's width and the elements that stick out past the viewport's right edge. */
function overflow(): { scrollWidth: number; width: number; culprits: string[] } {
  type El = { tagName: string; className: unknown; getBoundingClientRect(): { right: number; width: number } }
  const doc = (
    globalThis as unknown as {
      document: {
        documentElement: { clientWidth: number; scrollWidth: number }
        querySelectorAll(selector: string): ArrayLike<El>
      }
    }
  ).document
  const width = doc.documentElement.clientWidth
  const culprits: string[] = []
  for (const el of Array.from(doc.querySelectorAll('body *'))) {
    const r = el.getBoundingClientRect()
    if (r.right > width + 1 && r.width > 0)
      culprits.push(
        `${el.tagName.toLowerCase()}.${String(el.className).replace(/\s+/g, '.')} right=${Math.round(r.right)}`,
      )
  }
  return { scrollWidth: doc.documentElement.scrollWidth, width, culprits: culprits.slice(0, 8) }
}

/** What sticks out past the viewport's right edge, for a readable failure. */
export function overflowOf(page: Page): Promise<{ scrollWidth: number; width: number; culprits: string[] }> {
  return page.evaluate(overflow as unknown as () => { scrollWidth: number; width: number; culprits: string[] })
}

/** The page reads without sideways scrolling: nothing is wider than the viewport. */
export async function expectFitsWidth(page: Page): Promise<void> {
  const o = await overflowOf(page)
  expect(o.scrollWidth, `page wider than ${o.width}px: ${o.culprits.join(', ')}`).toBeLessThanOrEqual(o.width)
}

/** The look's theme and width both hold on the page as it is now, and the `readable` text reads clearly in it. */
export async function expectLook(page: Page, look: Look, ...readable: Locator[]): Promise<void> {
  await expectTheme(page, look.theme)
  await expectFitsWidth(page)
  for (const l of readable) await expectReadable(l)
}

/** Opens a dashboard view from the sections menu; under 900 px the sections sit behind the menu button. */
export async function openView(page: Page, view: string): Promise<void> {
  const toggle = page.getByTestId('menu-toggle')
  if (await toggle.isVisible()) await toggle.click()
  await page.getByTestId(`nav-${view}`).click()
  await expect(page).toHaveURL(new RegExp(`#/${view}`))
}

/** The looks at one width, one per theme. */
export function looksAt(width: number): Look[] {
  return LOOKS.filter((l) => l.width === width)
}

/** The page as it is now, checked in each theme at `width` (the scheme switches live, no reload). */
export async function expectEachTheme(page: Page, width: number, ...readable: Locator[]): Promise<void> {
  for (const look of looksAt(width)) {
    await useLook(page, look)
    await expectLook(page, look, ...readable)
  }
}

/**
 * Runs in the page (passed as source): the contrast ratio (WCAG 2) of an element's text against
 * what is painted behind it: its own and its ancestors' backgrounds, translucent ones blended.
 */
function contrast(el: unknown): { ratio: number; fg: string; bg: string } {
  type Node = { parentElement: Node | null }
  const g = globalThis as unknown as {
    getComputedStyle(el: unknown): { color: string; backgroundColor: string; colorScheme: string }
    matchMedia(query: string): { matches: boolean }
    document: { documentElement: unknown }
  }
  /** rgb()/rgba() or color(srgb …), as 0–255 channels and an alpha. */
  const parse = (css: string): [number, number, number, number] => {
    const n = (css.match(/-?[\d.]+/g) ?? []).map(Number)
    const scale = css.startsWith('color(') ? 255 : 1
    return [(n[0] ?? 0) * scale, (n[1] ?? 0) * scale, (n[2] ?? 0) * scale, n[3] ?? 1]
  }
  const layers: [number, number, number, number][] = []
  for (let at = el as Node | null; at; at = at.parentElement) {
    const c = parse(g.getComputedStyle(at).backgroundColor)
    if (c[3] > 0) layers.push(c)
    if (c[3] >= 1) break
  }
  const dark =
    g.matchMedia('(prefers-color-scheme: dark)').matches &&
    g.getComputedStyle(g.document.documentElement).colorScheme.includes('dark')
  let bg: [number, number, number] = dark ? [18, 18, 18] : [255, 255, 255]
  for (const [r, gr, b, a] of layers.reverse())
    bg = [r * a + bg[0] * (1 - a), gr * a + bg[1] * (1 - a), b * a + bg[2] * (1 - a)]
  const [fr, fgr, fb, fa] = parse(g.getComputedStyle(el).color)
  const fg: [number, number, number] = [
    fr * fa + bg[0] * (1 - fa),
    fgr * fa + bg[1] * (1 - fa),
    fb * fa + bg[2] * (1 - fa),
  ]
  const lum = (c: [number, number, number]): number => {
    const [r, gg, b] = c.map((v) => {
      const s = v / 255
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
    }) as [number, number, number]
    return 0.2126 * r + 0.7152 * gg + 0.0722 * b
  }
  const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x) as [number, number]
  const css = (c: number[]): string => `rgb(${c.map(Math.round).join(', ')})`
  return { ratio: (hi + 0.05) / (lo + 0.05), fg: css(fg), bg: css(bg) }
}

/** Every element `locator` matches reads clearly: text contrast at least WCAG AA's 4.5:1. */
export async function expectReadable(locator: Locator, minRatio = 4.5): Promise<void> {
  const read = contrast as unknown as (el: unknown) => { ratio: number; fg: string; bg: string }
  // Something to read first: a list still loading would otherwise pass with nothing checked.
  await expect(locator.first()).toBeVisible()
  for (const one of await locator.all()) {
    const c = await one.evaluate(read)
    const text = (await one.innerText()).trim().slice(0, 40)
    expect(c.ratio, `"${text}": ${c.fg} on ${c.bg}`).toBeGreaterThanOrEqual(minRatio)
  }
}
