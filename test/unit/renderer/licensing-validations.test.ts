// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { defineComponent, h } from 'vue'
import type { BackendApi } from '../../../src-renderer/api'
import ValidationLog from '../../../src-renderer/components/licensing/ValidationLog.vue'
import ValidationsChart from '../../../src-renderer/components/licensing/ValidationsChart.vue'
import { button, flush, mountWith, stubCanvas, unmountAll } from './mount'

afterEach(unmountAll)
const XSS = '<img src=x onerror=alert(1)>'

type Call = { method: string; input: Record<string, unknown> }
function fakeApi(calls: Call[], answers: Record<string, (input: Record<string, unknown>) => unknown>): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: Record<string, unknown>) => {
      calls.push({ method, input })
      const a = answers[method]
      if (!a) throw new Error(`unexpected ${method}`)
      return a(input)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

const entry = (id: number, over: Record<string, unknown> = {}) => ({
  id,
  at: Date.now() - id * 1000,
  kind: 'validate',
  license_id: 'lic-1',
  key_hash: null,
  ok: true,
  result: 'ok',
  fingerprint_hash: 'ab'.repeat(32),
  client_ip: '192.0.2.4',
  user_agent: `keysat-py/0.9 ${XSS}`,
  ...over,
})

describe('license detail: recent validations', () => {
  it('lists the license’s calls with result, address and user agent, and pages back', async () => {
    const calls: Call[] = []
    const api = fakeApi(calls, {
      licAdminValidations: (input) =>
        input.before_id === undefined
          ? Array.from({ length: 20 }, (_, i) => entry(i + 1, i === 0 ? { ok: false, result: 'expired' } : {}))
          : [entry(21, { kind: 'heartbeat' })],
    })
    const el = await mountWith(
      defineComponent(() => () => h(ValidationLog, { licenseId: 'lic-1' })),
      api,
    )
    expect(calls[0]).toEqual({
      method: 'licAdminValidations',
      input: { license_id: 'lic-1', limit: 20, before_id: undefined },
    })
    const rows = el.querySelectorAll('tbody tr')
    expect(rows).toHaveLength(20)
    expect(rows[0]!.textContent).toContain('expired')
    expect(rows[0]!.querySelector('.badge.bad')).not.toBeNull()
    expect(rows[0]!.textContent).toContain('192.0.2.4')
    // Text, never markup.
    expect(el.querySelector('img')).toBeNull()
    expect(rows[0]!.textContent).toContain(XSS)
    const older = button(el, 'Older calls')
    older.click()
    await flush()
    expect(calls[1]!.input).toMatchObject({ license_id: 'lic-1', before_id: 20 })
    expect(el.querySelectorAll('tbody tr')).toHaveLength(21)
  })

  it('says how calls get there when there are none', async () => {
    const api = fakeApi([], { licAdminValidations: () => [] })
    const el = await mountWith(
      defineComponent(() => () => h(ValidationLog, { licenseId: 'lic-2' })),
      api,
    )
    expect(el.textContent).toContain('No validation recorded yet')
  })
})

describe('Overview: validations per day', () => {
  it('draws one line per result and asks for the window it is given', async () => {
    stubCanvas()
    const calls: Call[] = []
    const today = new Date().toISOString().slice(0, 10)
    const api = fakeApi(calls, {
      licAdminValidationsDaily: (input) => ({
        from_day: today,
        to_day: today,
        rows:
          input.days === 7
            ? [
                { day: today, kind: 'validate', result: 'ok', count: 40 },
                { day: today, kind: 'validate', result: 'expired', count: 3 },
                { day: today, kind: 'heartbeat', result: 'rate_limited', count: 2 },
              ]
            : [],
      }),
    })
    const el = await mountWith(
      defineComponent(() => () => h(ValidationsChart, { days: 7 })),
      api,
    )
    expect(calls[0]).toEqual({ method: 'licAdminValidationsDaily', input: { days: 7 } })
    const legend = [...el.querySelectorAll('.u-legend .u-series')].map((s) => s.textContent?.trim())
    expect(legend.some((t) => t?.startsWith('ok'))).toBe(true)
    expect(legend.some((t) => t?.startsWith('expired'))).toBe(true)
    expect(legend.some((t) => t?.startsWith('rate_limited'))).toBe(true)
    // Only heartbeats: the validate lines go.
    const select = el.querySelector('select')!
    select.value = 'heartbeat'
    select.dispatchEvent(new Event('change'))
    await flush()
    const after = [...el.querySelectorAll('.u-legend .u-series')].map((s) => s.textContent?.trim())
    expect(after.some((t) => t?.startsWith('expired'))).toBe(false)
    expect(after.some((t) => t?.startsWith('rate_limited'))).toBe(true)
  })

  it('says how calls get there when the window has none', async () => {
    const api = fakeApi([], {
      licAdminValidationsDaily: () => ({ from_day: '2026-11-01', to_day: '2026-11-23', rows: [] }),
    })
    const el = await mountWith(
      defineComponent(() => () => h(ValidationsChart, { days: 30 })),
      api,
    )
    expect(el.textContent).toContain('No calls in this window')
  })
})
