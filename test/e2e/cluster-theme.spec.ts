import { expect, test, type Locator } from '@playwright/test'
import { logIn } from './login'

/**
 * A theme toggle on the Cluster view redraws its charts with axis text in the new theme's colour
 * (issue 13, item 5): before, uPlot kept the old colour and the labels vanished on dark.
 */
/** Just enough of the DOM for the in-page function (the node tsconfig has no DOM library). */
interface CanvasLike {
  width: number
  height: number
  isConnected: boolean
  closest(sel: string): unknown
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } }
}

/** Runs in the page: counts opaque canvas pixels painted in the chart's text colour (its axis labels). */
function countInk(c: CanvasLike): { inkPixels: number; color: string } {
  const win = globalThis as unknown as { getComputedStyle(el: unknown): { color: string } }
  const host = c.closest('[role="img"]')
  // Caught between a redraw's removal of the old canvas and the new one: nothing to read yet.
  if (host === null) return { inkPixels: 0, color: '' }
  const color = win.getComputedStyle(host).color
  const [r, g, b] = (color.match(/\d+/g) ?? ['0', '0', '0']).map(Number) as [number, number, number]
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data
  let inkPixels = 0
  for (let i = 0; i < data.length; i += 4)
    if (data[i + 3]! > 200 && Math.abs(data[i]! - r) + Math.abs(data[i + 1]! - g) + Math.abs(data[i + 2]! - b) < 40)
      inkPixels++
  return { inkPixels, color }
}

async function axisTextPixels(canvas: Locator): Promise<{ inkPixels: number; color: string }> {
  // Passed itself (not called from a closure): Playwright sends the function's source to the page.
  const read = countInk as unknown as (c: unknown) => { inkPixels: number; color: string }
  // A theme change replaces the canvas: the locator finds the new one on the next look.
  for (let tries = 0; ; tries++) {
    const seen = await canvas.evaluate(read)
    if (seen.color !== '' || tries >= 20) return seen
    await new Promise((r) => setTimeout(r, 100))
  }
}

test('toggling the theme on Cluster redraws the charts with visible axis labels', async ({ page }) => {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  await logIn(page)

  // The node history's first chart (a node card's engine strip is a chart too, and may come first).
  const history = page.locator('.charts figure.chart')
  const canvas = history.locator('canvas').first()
  // The charts appear once two readings exist (the demo probes every 15 s).
  await expect(canvas).toBeVisible({ timeout: 45_000 })
  await expect(history.first()).toContainText('CPU load (1 min average)')
  const before = await axisTextPixels(canvas)
  expect(before.inkPixels).toBeGreaterThan(20)
  const oldCanvas = await canvas.elementHandle()

  const toggle = page.locator('button[title^="Theme:"]')
  const startTheme = await page.evaluate("document.documentElement.getAttribute('data-theme')")
  // Cycle until the page's colour scheme actually flips (system → dark → light).
  for (let i = 0; i < 3; i++) {
    await toggle.click()
    const now = await axisTextPixels(canvas)
    if (now.color !== before.color) break
  }
  expect(await page.evaluate("document.documentElement.getAttribute('data-theme')")).not.toBe(startTheme)
  await expect.poll(() => oldCanvas!.evaluate((c) => (c as unknown as CanvasLike).isConnected)).toBe(false)
  const after = await axisTextPixels(canvas)
  expect(after.color).not.toBe(before.color)
  // Axis labels are drawn in the new theme's text colour.
  expect(after.inkPixels).toBeGreaterThan(20)
  // The legend shows while the pointer is over the plot.
  await history.locator('.u-over').first().hover()
  await expect(history.locator('.u-label').first()).toBeVisible()
  expect(errors).toEqual([])
})
