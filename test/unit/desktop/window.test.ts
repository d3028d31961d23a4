import path from 'node:path'
import { describe, expect, it, vi } from 'vitest'

// Electron stand-ins that record what the desktop shell asks for.
const fake = vi.hoisted(() => {
  const windows: {
    opts: { webPreferences: Record<string, unknown> }
    handlers: Map<string, (...a: unknown[]) => unknown>
    openHandler?: (d: { url: string }) => unknown
  }[] = []
  const appHandlers = new Map<string, (...a: unknown[]) => unknown>()
  const opened: string[] = []
  const trays: { menu: { label?: string }[] }[] = []
  let permission: ((wc: unknown, p: string, cb: (ok: boolean) => void) => void) | null = null
  class BrowserWindow {
    static getAllWindows = () => windows
    webContents: {
      on: (ev: string, fn: (...a: unknown[]) => unknown) => void
      setWindowOpenHandler: (fn: (d: { url: string }) => unknown) => void
    }
    constructor(opts: { webPreferences: Record<string, unknown> }) {
      const rec = { opts, handlers: new Map<string, (...a: unknown[]) => unknown>() } as (typeof windows)[number]
      windows.push(rec)
      this.webContents = {
        on: (ev, fn) => rec.handlers.set(ev, fn),
        setWindowOpenHandler: (fn) => (rec.openHandler = fn),
      }
    }
    once() {}
    on() {}
    loadFile() {
      return Promise.resolve()
    }
    loadURL() {
      return Promise.resolve()
    }
  }
  return {
    windows,
    trays,
    opened,
    appHandlers,
    getPermission: () => permission,
    electron: {
      app: {
        requestSingleInstanceLock: () => true,
        whenReady: () => Promise.resolve(),
        getPath: () => '',
        getAppPath: () => process.cwd(),
        on: (ev: string, fn: (...a: unknown[]) => unknown) => appHandlers.set(ev, fn),
        quit: () => undefined,
        exit: () => undefined,
      },
      BrowserWindow,
      screen: { getAllDisplays: () => [{ workArea: { x: 0, y: 0, width: 1920, height: 1080 } }] },
      nativeImage: { createFromPath: () => ({ isEmpty: () => true }) },
      Menu: { buildFromTemplate: (t: { label?: string }[]) => t },
      Tray: class {
        menu: { label?: string }[] = []
        constructor() {
          trays.push(this)
        }
        setToolTip() {}
        setContextMenu(m: { label?: string }[]) {
          this.menu = m
        }
        on() {}
        destroy() {}
      },
      session: {
        defaultSession: {
          setPermissionRequestHandler: (fn: typeof permission) => (permission = fn),
          setPermissionCheckHandler: () => undefined,
        },
      },
      shell: { openExternal: async (u: string) => void opened.push(u) },
      ipcMain: {
        handle: () => undefined,
        on: () => undefined,
        removeHandler: () => undefined,
        removeListener: () => undefined,
      },
    },
  }
})
vi.mock('electron', () => fake.electron)
vi.mock('../../../src-main/headless', async () => {
  const { startDaemon } = await import('../../helpers/daemon')
  return { startDaemon: () => startDaemon().then((d) => ({ core: d.core, stop: d.stop, onRestart: () => undefined })) }
})

const { runDesktop } = await import('../../../src-main/desktop/index')

describe('desktop window hardening', () => {
  it('creates an isolated, sandboxed window that cannot navigate, open windows or gain permissions', async () => {
    await runDesktop()
    const win = fake.windows[0]!
    expect(win.opts.webPreferences).toMatchObject({
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
    })
    expect(String(win.opts.webPreferences.preload)).toMatch(/preload[/\\]index\.js$/)
    expect(String(win.opts.webPreferences.preload)).toBe(path.join(process.cwd(), 'out', 'preload', 'index.js'))
    expect(fake.trays[0]?.menu.map((i) => i.label)).toContain('Quit Tandem')

    let prevented = false
    win.handlers.get('will-navigate')!({ preventDefault: () => (prevented = true) }, 'https://evil.example')
    expect(prevented).toBe(true)

    expect(win.openHandler!({ url: 'https://docs.example/page' })).toEqual({ action: 'deny' })
    expect(win.openHandler!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' })
    expect(fake.opened).toEqual(['https://docs.example/page'])

    let granted: boolean | undefined
    fake.getPermission()!({}, 'media', (ok) => (granted = ok))
    expect(granted).toBe(false)
    await fake.appHandlers.get('before-quit')?.({ preventDefault: () => undefined })
  })
})
