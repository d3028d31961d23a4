import path from 'node:path'
import { app, BrowserWindow, session, shell } from 'electron'
import { startDaemon, type RunningDaemon } from '../headless'
import { registerIpc } from './ipc'

/**
 * The desktop shell: the same daemon as headless mode (it still serves the LAN on PORT), plus one
 * hardened window whose renderer talks to main over IPC.
 */
export async function runDesktop(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return
  }
  await app.whenReady()
  const daemon = await startDaemon({ dataDir: app.getPath('userData') })
  let disposeIpc = registerIpc(daemon.core)
  // "Restart to apply" builds a new core: the window's IPC follows it.
  daemon.onRestart((core) => {
    disposeIpc()
    disposeIpc = registerIpc(core)
  })

  // Deny every permission request (camera, notifications, ...) unless listed here.
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false))
  session.defaultSession.setPermissionCheckHandler(() => false)

  let win: BrowserWindow | null = createWindow()
  app.on('second-instance', () => {
    if (win) {
      if (win.isMinimized()) win.restore()
      win.focus()
    }
  })
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) win = createWindow()
  })
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit()
  })
  let quitting = false
  app.on('before-quit', (e) => {
    if (quitting) return
    e.preventDefault()
    quitting = true
    disposeIpc()
    void stopAndExit(daemon)
  })
  win.on('closed', () => (win = null))
}

async function stopAndExit(daemon: RunningDaemon): Promise<void> {
  try {
    await daemon.stop()
  } finally {
    app.exit(0)
  }
}

function createWindow(): BrowserWindow {
  const win = new BrowserWindow({
    width: 1360,
    height: 900,
    show: false,
    title: 'Tandem',
    webPreferences: {
      preload: path.join(__dirname, '../preload/index.js'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  })
  // No navigation away from the app and no new windows; external links open in the browser.
  win.webContents.on('will-navigate', (e) => e.preventDefault())
  win.webContents.on('will-redirect', (e) => e.preventDefault())
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url)
    return { action: 'deny' }
  })
  win.once('ready-to-show', () => win.show())
  if (process.env.ELECTRON_RENDERER_URL) void win.loadURL(process.env.ELECTRON_RENDERER_URL)
  else void win.loadFile(path.join(__dirname, '../renderer/index.html'))
  return win
}
