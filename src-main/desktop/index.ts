import path from 'node:path'
import { app, BrowserWindow, screen, session, shell } from 'electron'
import { electronSqliteBinding, SQLITE_BINDING_ENV } from '../lib/nativeBinding'
import { startDaemon, type RunningDaemon } from '../headless'
import { registerIpc } from './registerIpc'
import { createTray } from './tray'
import { fitToDisplays, loadWindowState, saveWindowState, WINDOW_STATE_FILE, type WindowState } from './windowState'

/**
 * The desktop shell: the same daemon as headless mode (it still serves the LAN on PORT), plus one
 * hardened window whose renderer talks to main over IPC, and a tray item. Settings and the window's
 * size live in Electron's userData (the daemon's DATA_DIR here).
 */
export async function runDesktop(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return
  }
  await app.whenReady()
  // The bundle's own files, from the app root (package.json's folder, or app.asar when packaged).
  const root = app.getAppPath()
  const binding = electronSqliteBinding(root)
  if (binding !== null) process.env[SQLITE_BINDING_ENV] = binding
  const userData = app.getPath('userData')
  const daemon = await startDaemon({ dataDir: userData })
  let disposeIpc = registerIpc(daemon.core)
  // "Restart to apply" builds a new core: the window's IPC follows it.
  daemon.onRestart((core) => {
    disposeIpc()
    disposeIpc = registerIpc(core)
  })
  const stateFile = path.join(userData, WINDOW_STATE_FILE)
  const warn = (msg: string): void => daemon.core.logger.warn(msg)

  // Deny every permission request (camera, notifications, ...) unless listed here.
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false))
  session.defaultSession.setPermissionCheckHandler(() => false)

  let win: BrowserWindow | null = null
  const showWindow = (): void => {
    if (win === null) {
      win = createWindow(root, stateFile, warn)
      win.on('closed', () => (win = null))
      return
    }
    if (win.isMinimized()) win.restore()
    win.show()
    win.focus()
  }
  showWindow()
  app.on('second-instance', showWindow)
  app.on('activate', showWindow)

  let disposeTray: (() => void) | null = null
  try {
    disposeTray = createTray(daemon.core, path.join(root, 'resources', 'icon.png'), {
      open: showWindow,
      quit: () => app.quit(),
    })
  } catch (err) {
    // Some Linux desktops have no tray; the window and its menu still work.
    warn(`no tray item: ${err instanceof Error ? err.message : String(err)}`)
  }
  // With a tray the daemon keeps serving the LAN after the window closes; Quit is in the tray.
  app.on('window-all-closed', () => {
    if (disposeTray === null && process.platform !== 'darwin') app.quit()
  })
  let quitting = false
  app.on('before-quit', (e) => {
    if (quitting) return
    e.preventDefault()
    quitting = true
    disposeTray?.()
    disposeIpc()
    void stopAndExit(daemon)
  })
}

async function stopAndExit(daemon: RunningDaemon): Promise<void> {
  try {
    await daemon.stop()
  } finally {
    app.exit(0)
  }
}

function createWindow(root: string, stateFile: string, warn: (msg: string) => void): BrowserWindow {
  const saved = fitToDisplays(
    loadWindowState(stateFile, warn),
    screen.getAllDisplays().map((d) => d.workArea),
  )
  const win = new BrowserWindow({
    width: saved.width,
    height: saved.height,
    ...(saved.x !== undefined && saved.y !== undefined ? { x: saved.x, y: saved.y } : {}),
    minWidth: 640,
    minHeight: 480,
    show: false,
    title: 'Tandem',
    icon: path.join(root, 'resources', 'icon.png'),
    webPreferences: {
      preload: path.join(root, 'out', 'preload', 'index.js'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  })
  rememberWindowState(win, stateFile, warn)
  // No navigation away from the app and no new windows; external links open in the browser.
  win.webContents.on('will-navigate', (e) => e.preventDefault())
  win.webContents.on('will-redirect', (e) => e.preventDefault())
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url))
      shell.openExternal(url).catch((err: unknown) => warn(`cannot open ${url}: ${String(err)}`))
    return { action: 'deny' }
  })
  win.once('ready-to-show', () => {
    if (saved.maximized) win.maximize()
    win.show()
  })
  const loaded = process.env.ELECTRON_RENDERER_URL
    ? win.loadURL(process.env.ELECTRON_RENDERER_URL)
    : win.loadFile(path.join(root, 'out', 'renderer', 'index.html'))
  loaded.catch((err: unknown) => warn(`the dashboard did not load: ${String(err)}`))
  return win
}

/** Saves the window's normal size and place (not the maximized one) when it stops moving and on close. */
function rememberWindowState(win: BrowserWindow, stateFile: string, warn: (msg: string) => void): void {
  let timer: NodeJS.Timeout | null = null
  const save = (): void => {
    if (timer) clearTimeout(timer)
    timer = null
    if (win.isDestroyed()) return
    const b = win.getNormalBounds()
    const state: WindowState = { width: b.width, height: b.height, x: b.x, y: b.y, maximized: win.isMaximized() }
    try {
      saveWindowState(stateFile, state)
    } catch (err) {
      warn(`window state not saved: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const later = (): void => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(save, 500)
  }
  win.on('resize', later)
  win.on('move', later)
  win.on('close', save)
}
