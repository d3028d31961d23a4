// @vitest-environment happy-dom
import { createApp, h, ref } from 'vue'
import { afterEach, describe, expect, it } from 'vitest'
import TimeChart from '../../../src-renderer/components/TimeChart.vue'
import { flush, stubCanvas } from './mount'

/** Charts follow the theme and draw bars (issue 13, item 5). */
stubCanvas()
let unmount: (() => void) | null = null
afterEach(() => {
  unmount?.()
  document.documentElement.removeAttribute('data-theme')
  document.body.innerHTML = ''
})

async function mountChart(given: Record<string, unknown> | (() => Record<string, unknown>)): Promise<HTMLElement> {
  const props = (): Record<string, unknown> => (typeof given === 'function' ? given() : given)
  const el = document.createElement('div')
  document.body.appendChild(el)
  const app = createApp({
    render: () =>
      h(TimeChart, {
        title: 'Revenue per day',
        times: [1, 2, 3],
        series: [{ label: 'sats', values: [5, 7, 9], color: '#f7931a' }],
        yLabel: 'sats',
        ...props(),
      }),
  })
  app.mount(el)
  unmount = () => app.unmount()
  await flush()
  return el
}

describe('TimeChart', () => {
  it('redraws with a new canvas when the theme changes, keeping its axis label', async () => {
    const el = await mountChart({})
    const before = el.querySelector('canvas')
    expect(before).not.toBeNull()
    document.documentElement.setAttribute('data-theme', 'dark')
    await flush()
    const after = el.querySelector('canvas')
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    expect(before!.isConnected).toBe(false)
    expect(el.textContent).toContain('sats')
  })

  it('draws bars for kind="bars" and lines otherwise', async () => {
    const bars = await mountChart({ kind: 'bars' })
    expect(bars.querySelector('.u-legend')?.textContent).toContain('sats')
    // uPlot marks a series' legend swatch with its fill: bars are filled solid, lines faintly.
    const swatch = bars.querySelector('.u-series:nth-child(2) .u-marker') as HTMLElement | null
    expect(swatch?.style.background ?? '').toContain('cc')
  })
})

describe('TimeChart legend', () => {
  const legend = (el: HTMLElement) => el.querySelector<HTMLElement>('.u-legend')!

  it('shows its legend only while the cursor is over the plot, never an idle "--" row', async () => {
    const el = await mountChart({})
    expect(legend(el).style.visibility).toBe('hidden')
    const over = el.querySelector<HTMLElement>('.u-over')!
    over.dispatchEvent(new MouseEvent('mouseenter', { clientX: 40, clientY: 40 }))
    over.dispatchEvent(new MouseEvent('mousemove', { clientX: 40, clientY: 40 }))
    await flush()
    expect(legend(el).style.visibility).toBe('visible')
    over.dispatchEvent(new MouseEvent('mouseleave', { clientX: -5, clientY: -5 }))
    await flush()
    expect(legend(el).style.visibility).toBe('hidden')
  })

  it('keeps the chart, and a legend being read, when new points arrive', async () => {
    const times = ref([1, 2, 3])
    const values = ref([5, 7, 9])
    const el = await mountChart(() => ({
      times: times.value,
      series: [{ label: 'load', values: values.value, color: '#3366cc' }],
    }))
    const canvas = el.querySelector('canvas')
    const over = el.querySelector<HTMLElement>('.u-over')!
    over.dispatchEvent(new MouseEvent('mouseenter', { clientX: 40, clientY: 40 }))
    over.dispatchEvent(new MouseEvent('mousemove', { clientX: 40, clientY: 40 }))
    await flush()
    times.value = [1, 2, 3, 4]
    values.value = [5, 7, 9, 11]
    await flush()
    expect(el.querySelector('canvas')).toBe(canvas)
    expect(legend(el).style.visibility).toBe('visible')
  })
})
