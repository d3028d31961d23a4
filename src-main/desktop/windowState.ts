import { z } from 'zod'
import { atomicWriteFile, readStateFile, replacedStateFileMessage } from '../lib/files'

/** The main window's size and place, kept in Electron's userData so it reopens as it was left. */
export const WindowState = z.object({
  width: z.number().int().min(640).max(16384),
  height: z.number().int().min(480).max(16384),
  x: z.number().int().optional(),
  y: z.number().int().optional(),
  maximized: z.boolean().default(false),
})
export type WindowState = z.infer<typeof WindowState>

export const DEFAULT_WINDOW_STATE: WindowState = { width: 1360, height: 900, maximized: false }
export const WINDOW_STATE_FILE = 'window-state.json'

export interface Area {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

/** The saved state, or the default when there is none; an unreadable file is reported and set aside. */
export function loadWindowState(file: string, warn: (msg: string) => void): WindowState {
  const read = readStateFile(file, (text) => WindowState.parse(JSON.parse(text)))
  if (read.kind === 'ok') return read.value
  if (read.kind === 'corrupt') warn(replacedStateFileMessage('window state', file, read, 'using the default size'))
  return { ...DEFAULT_WINDOW_STATE }
}

export function saveWindowState(file: string, state: WindowState): void {
  atomicWriteFile(file, JSON.stringify(WindowState.parse(state)))
}

/**
 * The state to open with on the current displays: a position whose title bar would be off every
 * display is dropped (the window is centred instead), and the size shrinks to the largest display.
 */
export function fitToDisplays(state: WindowState, workAreas: readonly Area[]): WindowState {
  if (workAreas.length === 0) return state
  const widest = Math.max(...workAreas.map((a) => a.width))
  const tallest = Math.max(...workAreas.map((a) => a.height))
  const fitted: WindowState = {
    width: Math.min(state.width, widest),
    height: Math.min(state.height, tallest),
    maximized: state.maximized,
  }
  if (state.x === undefined || state.y === undefined) return fitted
  const { x, y } = state
  // The top 32 px strip of the window (its title bar) must overlap a display by at least 64 px.
  const visible = workAreas.some(
    (a) => y >= a.y && y + 32 <= a.y + a.height && Math.min(x + fitted.width, a.x + a.width) - Math.max(x, a.x) >= 64,
  )
  return visible ? { ...fitted, x, y } : fitted
}
