import { Menu, nativeImage, Tray, type MenuItemConstructorOptions } from 'electron'
import type { ConnectivityView } from '../contract/nodes'
import type { Core } from '../app/compositionRoot'
import { invokeMethod } from '../app/invoke'
import { nodeLines, trayMenu, trayTooltip, type TrayItem } from './trayModel'

/** Refreshes between connectivity events too, so "not checked yet" does not linger. */
const REFRESH_MS = 30_000

/**
 * The tray (menu bar) item: Open dashboard, the node status summary, Quit. Its menu is rebuilt
 * from the connectivity store whenever a node changes state.
 */
export function createTray(core: Core, iconFile: string, actions: { open(): void; quit(): void }): () => void {
  const icon = nativeImage.createFromPath(iconFile)
  const tray = new Tray(icon.isEmpty() ? icon : icon.resize({ width: 16, height: 16 }))
  const abort = new AbortController()
  let view: ConnectivityView | null = null

  const render = (): void => {
    const lines = nodeLines(core.config.nodes, view)
    tray.setToolTip(trayTooltip(lines))
    tray.setContextMenu(Menu.buildFromTemplate(trayMenu(lines).map((item) => menuItem(item, actions))))
  }
  const refresh = async (): Promise<void> => {
    try {
      view = (await invokeMethod(core.dispatcher, 'getConnectivity', {}, ipcContext(abort.signal))) as ConnectivityView
    } catch (err) {
      core.logger.warn('tray: connectivity unavailable', { error: err })
    }
    if (!abort.signal.aborted) render()
  }

  render()
  void refresh()
  const timer = setInterval(() => void refresh(), REFRESH_MS)
  timer.unref()
  void (async () => {
    for await (const ev of core.events.stream(undefined, abort.signal))
      if (ev.name === 'connectivity.transition' || ev.name === 'resync') await refresh()
  })().catch(() => undefined)
  tray.on('click', () => actions.open())

  return () => {
    abort.abort()
    clearInterval(timer)
    tray.destroy()
  }
}

function menuItem(item: TrayItem, actions: { open(): void; quit(): void }): MenuItemConstructorOptions {
  if (item.kind === 'separator') return { type: 'separator' }
  if (item.kind === 'status') return { label: item.label, enabled: false }
  return { label: item.label, click: () => (item.action === 'open' ? actions.open() : actions.quit()) }
}

/** The desktop shell calls contract methods as the operator, like the IPC adapter does. */
function ipcContext(signal: AbortSignal) {
  return {
    via: 'ipc' as const,
    signal,
    session: { authenticated: true, begin: () => undefined, end: () => undefined },
  }
}
