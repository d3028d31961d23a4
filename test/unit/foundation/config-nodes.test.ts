import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkSettingChanges, loadConfig, nodeNames, settingsView } from '../../../src-main/config/load'
import { parseExtraNodes } from '../../../src-main/config/nodes'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-config-nodes-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string> = {}) => loadConfig({ env: { DATA_DIR: dir, ...env } })
const TWO = { NODE1_HOST: 'spark1', NODE1_USER: 'ops', NODE2_HOST: 'spark2', NODE2_USER: 'ops' }

describe('NODES: the nodes past node2', () => {
  it('names each entry node3, node4, … in order, with its port or 22', () => {
    const c = load({ ...TWO, NODES: 'ops@spark3, admin@10.0.0.4:2222 ,ops@[fd00::5]:2200' })
    expect(c.nodes.node3).toEqual({ user: 'ops', host: 'spark3', port: 22 })
    expect(c.nodes.node4).toEqual({ user: 'admin', host: '10.0.0.4', port: 2222 })
    expect(c.nodes.node5).toEqual({ user: 'ops', host: 'fd00::5', port: 2200 })
    expect(nodeNames(c)).toEqual(['node1', 'node2', 'node3', 'node4', 'node5'])
    expect(c.warnings).toEqual([])
  })

  it('leaves a two-node install exactly as before', () => {
    const c = load(TWO)
    expect(Object.keys(c.nodes)).toEqual(['node1', 'node2'])
    expect(nodeNames(c)).toEqual(['node1', 'node2'])
    expect(nodeNames(load())).toEqual(['node1', 'node2'])
    expect(load().nodes.node1).toBeNull()
  })

  it('reports a malformed entry and skips it; the rest load under their own names', () => {
    const c = load({ ...TWO, NODES: 'ops@spark3,bad entry;rm -rf /,ops@spark5,ops@spark6:0,Root@spark7' })
    expect(c.nodes.node3).toEqual({ user: 'ops', host: 'spark3', port: 22 })
    expect(c.nodes.node4).toBeNull()
    expect(c.nodes.node5).toEqual({ user: 'ops', host: 'spark5', port: 22 })
    expect(c.nodes.node6).toBeNull()
    expect(c.nodes.node7).toBeNull()
    const warned = c.warnings.filter((w) => w.startsWith('NODES'))
    expect(warned).toHaveLength(3)
    expect(warned[0]).toContain('node4')
    expect(warned[1]).toMatch(/node6.*port/)
    expect(warned[2]).toMatch(/node7.*user/)
    // The setting itself stays: only the bad entries are dropped.
    expect(c.settings.NODES.source).toBe('environment')
    expect(nodeNames(c)).toEqual(['node1', 'node2', 'node3', 'node4', 'node5', 'node6', 'node7'])
  })

  it('checks ports: 1 to 65535, decimal digits only', () => {
    expect(parseExtraNodes('a@h:65535', []).targets.node3).toEqual({ user: 'a', host: 'h', port: 65535 })
    for (const bad of ['a@h:65536', 'a@h:0', 'a@h:0x16', 'a@h:', 'a@h:22:22', 'a@h:-1']) {
      const { targets, problems } = parseExtraNodes(bad, [])
      expect(targets.node3, bad).toBeNull()
      expect(problems, bad).toHaveLength(1)
    }
  })

  it('refuses an entry without a user or host, and one naming node1 or node2 again', () => {
    const taken = [{ user: 'ops', host: 'spark1', port: 22 }]
    const { targets, problems } = parseExtraNodes('spark3,@spark4,ops@,other@spark1,ops@spark1:2222', taken)
    expect(targets.node3).toBeNull()
    expect(targets.node4).toBeNull()
    expect(targets.node5).toBeNull()
    expect(targets.node6).toBeNull()
    expect(targets.node7).toEqual({ user: 'ops', host: 'spark1', port: 2222 })
    expect(problems).toHaveLength(4)
    expect(problems[3]).toMatch(/same host and port/)
  })

  it('falls back to no extra nodes, with one warning, past 62 entries', () => {
    const many = Array.from({ length: 63 }, (_, i) => `ops@h${i}`).join(',')
    const c = load({ ...TWO, NODES: many })
    expect(nodeNames(c)).toEqual(['node1', 'node2'])
    expect(c.warnings.filter((w) => w.startsWith('NODES'))).toHaveLength(1)
    const max = Array.from({ length: 62 }, (_, i) => `ops@h${i}`).join(',')
    expect(nodeNames(load({ ...TWO, NODES: max })).at(-1)).toBe('node64')
  })

  it('refuses a malformed entry when saved from the Settings page', () => {
    const c = load(TWO)
    expect(checkSettingChanges(c, { NODES: 'ops@spark3,ops@spark4' })).toEqual([])
    const errors = checkSettingChanges(c, { NODES: 'ops@spark3,ops@spark4:99999' })
    expect(errors).toHaveLength(1)
    expect(errors[0]?.message).toMatch(/port/)
    const row = settingsView(c).find((s) => s.name === 'NODES')
    expect(row?.group).toBe('nodes')
    expect(row?.label).toBe('More nodes')
  })
})
