import { contextBridge, ipcRenderer } from 'electron'
import { createBridge } from './bridge'

// The only place the preload touches electron: the bridge logic itself is electron-free.
contextBridge.exposeInMainWorld('tandem', createBridge(ipcRenderer))
