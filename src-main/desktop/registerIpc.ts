import { ipcMain } from 'electron'
import type { Core } from '../app/core'
import { createIpcAdapter } from './ipcAdapter'

/** Wires the IPC adapter to Electron's `ipcMain`; everything else lives in ipcAdapter.ts. */
export function registerIpc(core: Core): () => void {
  return createIpcAdapter(core, ipcMain, { rendererUrl: process.env.ELECTRON_RENDERER_URL })
}
