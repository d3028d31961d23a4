// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApp, type App as VueApp } from 'vue'
import { createPinia } from 'pinia'
import App from '../../../src-renderer/App.vue'
import { router } from '../../../src-renderer/router'
import { initBackend, type BackendApi } from '../../../src-renderer/api'
import { flush, stubCanvas } from './mount'

const config = {
  name: 'Tandem',
  version: '1.2.3:4',
  chat_ui_url: null,
  public_url: null,
  data_dir: '/data',
  settings: [],
  roles: {},
  warnings: [],
}

function fakeApi(transport: 'ipc' | 'http'): BackendApi {
  return {
    transport,
    call: (async (method: string) => {
      if (method === 'session') return { authenticated: true }
      if (method === 'getConfig') return config
      if (method === 'logout') return { ok: true }
      throw new Error(`${method} is not part of this test`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

stubCanvas()
let app: VueApp | null = null
afterEach(() => {
  app?.unmount()
  document.body.innerHTML = ''
})

async function mountShell(transport: 'ipc' | 'http'): Promise<HTMLElement> {
  initBackend(() => undefined, fakeApi(transport))
  const el = document.createElement('div')
  document.body.appendChild(el)
  app = createApp(App).use(createPinia()).use(router)
  await router.push('/settings')
  app.mount(el)
  await flush()
  return el
}

describe('the app shell', () => {
  it('offers Log out in a browser, where a session cookie is what signs the operator in', async () => {
    const el = await mountShell('http')
    expect(el.querySelector('[data-testid="version"]')?.textContent?.trim()).toBe('1.2.3 (build 4)')
    expect(el.querySelector('[data-testid="logout"]')).not.toBeNull()
  })

  it('shows no Log out in the desktop window, which needs no session', async () => {
    const el = await mountShell('ipc')
    expect(el.querySelector('[data-testid="version"]')?.textContent?.trim()).toBe('1.2.3 (build 4)')
    expect(el.querySelector('[data-testid="logout"]')).toBeNull()
  })

  it('collapses the sections into a menu that opens from the top bar and closes on choosing one', async () => {
    const el = await mountShell('http')
    const toggle = el.querySelector<HTMLButtonElement>('[data-testid="menu-toggle"]')!
    const nav = el.querySelector('#sidenav')!
    expect(toggle.getAttribute('aria-controls')).toBe('sidenav')
    expect(nav.classList.contains('open')).toBe(false)
    toggle.click()
    await flush()
    expect(nav.classList.contains('open')).toBe(true)
    expect(toggle.getAttribute('aria-expanded')).toBe('true')
    el.querySelector<HTMLAnchorElement>('[data-testid="nav-settings"]')!.click()
    await flush()
    expect(nav.classList.contains('open')).toBe(false)
    expect(toggle.getAttribute('aria-expanded')).toBe('false')
  })

  it('starts with a "Skip to content" link that moves focus to the view heading', async () => {
    const el = await mountShell('http')
    const first = el.querySelector<HTMLElement>('a[href], button, input, select, textarea, [tabindex]')
    expect(first?.textContent?.trim()).toBe('Skip to content')
    first!.click()
    await flush()
    expect(document.activeElement?.tagName).toBe('H1')
    expect(document.activeElement?.textContent).toContain('Settings')
  })

  it('moves focus to the new view heading after choosing a section', async () => {
    const el = await mountShell('http')
    const link = el.querySelector<HTMLAnchorElement>('[data-testid="nav-settings"]')!
    link.focus()
    expect(document.activeElement).toBe(link)
    await router.push('/gateway')
    await flush()
    expect(document.activeElement?.tagName).toBe('H1')
    expect(document.activeElement?.textContent).toContain('Gateway')
  })

  it('confirms Log out on the log-in page', async () => {
    const el = await mountShell('http')
    el.querySelector<HTMLButtonElement>('[data-testid="logout"]')!.click()
    await vi.waitFor(() => expect(el.querySelector('[data-testid="login-submit"]')).not.toBeNull())
    expect(router.currentRoute.value.name).toBe('login')
    expect(el.querySelector('[data-testid="logged-out"]')?.textContent).toContain('You are logged out')
    expect(el.querySelector('[data-testid="login-submit"]')?.textContent?.trim()).toBe('Log in')
  })
})
