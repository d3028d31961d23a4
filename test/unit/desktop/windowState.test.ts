import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  DEFAULT_WINDOW_STATE,
  fitToDisplays,
  loadWindowState,
  saveWindowState,
} from '../../../src-main/desktop/windowState'
import { nodeLines, trayMenu, trayTooltip } from '../../../src-main/desktop/trayModel'
import { keptAsideCopy } from '../../helpers/keptAside'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-window-'))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

describe('window state in userData', () => {
  it('remembers the size and place it was left with', () => {
    const file = path.join(dir, 'window-state.json')
    const warnings: string[] = []
    expect(loadWindowState(file, (m) => warnings.push(m))).toEqual(DEFAULT_WINDOW_STATE)
    saveWindowState(file, { width: 1000, height: 700, x: 40, y: 30, maximized: true })
    expect(loadWindowState(file, (m) => warnings.push(m))).toEqual({
      width: 1000,
      height: 700,
      x: 40,
      y: 30,
      maximized: true,
    })
    expect(warnings).toEqual([])
  })

  it('a malformed file is reported, kept aside and replaced by the default size', () => {
    const file = path.join(dir, 'bad-state.json')
    fs.writeFileSync(file, '{"width": "huge"')
    const warnings: string[] = []
    expect(loadWindowState(file, (m) => warnings.push(m))).toEqual(DEFAULT_WINDOW_STATE)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('is malformed')
    expect(warnings[0]).toContain(`moved aside to ${keptAsideCopy(file)}`)
    fs.writeFileSync(file, JSON.stringify({ width: 10, height: 10 }))
    expect(loadWindowState(file, () => undefined)).toEqual(DEFAULT_WINDOW_STATE)
  })

  it('opens on a display: an off-screen place is dropped and a size larger than every display shrinks', () => {
    const laptop = [{ x: 0, y: 0, width: 1440, height: 860 }]
    expect(fitToDisplays({ width: 2500, height: 1400, x: 100, y: 50, maximized: false }, laptop)).toEqual({
      width: 1440,
      height: 860,
      x: 100,
      y: 50,
      maximized: false,
    })
    // Last seen on a second monitor that is gone now.
    expect(fitToDisplays({ width: 1200, height: 800, x: 2600, y: 100, maximized: false }, laptop)).toEqual({
      width: 1200,
      height: 800,
      maximized: false,
    })
    const twoScreens = [...laptop, { x: 1440, y: 0, width: 2560, height: 1400 }]
    expect(fitToDisplays({ width: 1200, height: 800, x: 2600, y: 100, maximized: false }, twoScreens).x).toBe(2600)
  })
})

describe('tray menu', () => {
  const targets = { node1: { host: '10.0.0.11', user: 'spark' }, node2: null }

  it('offers Open dashboard, a status line per node and Quit', () => {
    const view = { macs: {}, events: [], subjects: { node1: { state: 'down' as const, last_change: 1 } } }
    const lines = nodeLines(targets, view)
    expect(trayMenu(lines)).toEqual([
      { kind: 'action', label: 'Open dashboard', action: 'open' },
      { kind: 'separator' },
      { kind: 'status', label: 'node1 (spark@10.0.0.11): down' },
      { kind: 'status', label: 'node2: not configured' },
      { kind: 'separator' },
      { kind: 'action', label: 'Quit Tandem', action: 'quit' },
    ])
    expect(trayTooltip(lines)).toBe('Tandem: node1 down')
  })

  it('before the first probe a configured node reads "not checked yet"', () => {
    const lines = nodeLines(targets, null)
    expect(lines[0]?.state).toBe('unknown')
    expect(trayMenu(lines)[2]).toEqual({ kind: 'status', label: 'node1 (spark@10.0.0.11): not checked yet' })
    expect(trayTooltip(nodeLines({ node1: null, node2: null }, null))).toBe('Tandem: no node configured')
  })
})
