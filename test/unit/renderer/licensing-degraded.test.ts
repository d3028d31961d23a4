// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { createApp, type App } from 'vue'
import { createMemoryHistory, createRouter } from 'vue-router'
import { initBackend, type BackendApi } from '../../../src-renderer/api'
import LicensingView from '../../../src-renderer/views/LicensingView.vue'
import { flush } from './mount'

let app: App | null = null
afterEach(() => {
  app?.unmount()
  app = null
  document.body.innerHTML = ''
})

async function mountLicensing(licensing: unknown, calls: string[]): Promise<HTMLElement> {
  const api: BackendApi = {
    transport: 'http',
    call: (async (method: string) => {
      calls.push(method)
      if (method === 'health') return { ok: true, version: 'x', uptime_s: 1, components: { licensing } }
      if (method === 'getConfig') return { data_dir: '/srv/tandem-data' }
      throw new Error('licensing is unavailable')
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
  initBackend(() => undefined, api)
  const router = createRouter({ history: createMemoryHistory(), routes: [{ path: '/', component: LicensingView }] })
  await router.push('/')
  await router.isReady()
  const el = document.createElement('div')
  document.body.appendChild(el)
  app = createApp(LicensingView).use(router)
  app.mount(el)
  await flush()
  return el
}

describe('Licensing view with the database unavailable', () => {
  it('says licensing is off, why, and what to do with which file, instead of failing tabs', async () => {
    const calls: string[] = []
    const el = await mountLicensing(
      {
        state: 'degraded',
        reason: 'the licensing database licensing.sqlite cannot be opened: file is not a database',
        remedy:
          'Restore licensing.sqlite in the data directory from a backup, or move it aside (together with licensing.sqlite-wal and licensing.sqlite-shm if present) to start with an empty licensing database; then restart Tandem.',
      },
      calls,
    )
    const banner = el.querySelector('[data-testid="licensing-degraded"]')
    expect(banner?.textContent).toContain('Licensing is off')
    expect(banner?.textContent).toContain('file is not a database')
    expect(banner?.textContent).toMatch(/Restore licensing\.sqlite .*from a backup/)
    expect(banner?.textContent).toContain('move it aside')
    expect(banner?.textContent).toContain('/srv/tandem-data')
    expect(el.querySelector('[role="tablist"]')).toBeNull()
    // No panel was asked for data that cannot come.
    expect(calls.filter((c) => c.startsWith('lic'))).toEqual([])
  })

  it('shows the tabs when licensing is ok', async () => {
    const el = await mountLicensing({ state: 'ok', reason: null, remedy: null }, [])
    expect(el.querySelector('[data-testid="licensing-degraded"]')).toBeNull()
    expect(el.querySelector('[role="tablist"]')).not.toBeNull()
  })
})
