import { Menu, nativeImage, Tray, type MenuItemConstructorOptions } from 'electron'
import type { ConnectivityView, StatusView } from '../contract/nodes'
import type { Core } from '../app/core'
import { invokeMethod } from '../app/invoke'
import { nodeLines, serviceLines, TrayFeed, trayMenu, trayTooltip, type TrayItem, type TrayState } from './trayModel'

/**
 * The tray (menu bar) item: Open dashboard, the nodes' and services' state, Quit. Its state is the
 * dashboard's: read once through the same contract methods, then fed by the core's event bus
 * (trayModel's TrayFeed), with no polling of its own.
 */
export function createTray(core: Core, iconFile: string, actions: { open(): void; quit(): void }): () => void {
  const icon = nativeImage.createFromPath(iconFile)
  const tray = new Tray(icon.isEmpty() ? icon : icon.resize({ width: 16, height: 16 }))
  const abort = new AbortController()

  const render = (state: TrayState): void => {
    if (abort.signal.aborted) return
    const lines = nodeLines(core.config.nodes, state.connectivity)
    const services = serviceLines(state)
    tray.setToolTip(trayTooltip(lines, services))
    tray.setContextMenu(Menu.buildFromTemplate(trayMenu(lines, services).map((item) => menuItem(item, actions))))
  }
  const read = async <T>(method: 'getConnectivity' | 'getStatus'): Promise<T | null> => {
    try {
      return (await invokeMethod(core.dispatcher, method, {}, ipcContext(abort.signal))) as T
    } catch (err) {
      core.logger.warn(`tray: ${method} unavailable`, { error: err })
      return null
    }
  }
  const feed = new TrayFeed(
    {
      subscribe: (fn) => core.events.subscribe(fn),
      // Connectivity after the status checks, which record transitions (as the cluster store reads).
      read: async () => {
        const status = await read<StatusView>('getStatus')
        return { connectivity: await read<ConnectivityView>('getConnectivity'), status }
      },
    },
    render,
  )

  render({ connectivity: null, services: {} })
  feed.start().catch((err: unknown) => core.logger.warn('tray: could not follow the events', { error: err }))
  tray.on('click', () => actions.open())

  return () => {
    abort.abort()
    feed.stop()
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
