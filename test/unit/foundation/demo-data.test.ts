import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseEnv } from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  DEMO_ENV_FILE,
  DEMO_MARKER,
  demoDataLines,
  demoDoctorCommand,
  demoFresh,
  prepareDemoData,
  writeDemoEnv,
  type DemoData,
} from '../../sim/demoData'

/** Issue 46 #9: the demo says where its state lives, what it carries from the last run, and DEMO_FRESH=1. */
describe('the demo data directory', () => {
  let root: string
  let dir: string
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-demo-data-'))
    dir = path.join(root, 'demo')
  })
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }))

  /** What a demo run leaves behind: a token, history, two placements and a saved setting. */
  function previousRun(): void {
    fs.mkdirSync(path.join(dir, 'ssh'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'admin-token'), 'x'.repeat(32))
    fs.writeFileSync(path.join(dir, 'licensing.sqlite'), '')
    fs.writeFileSync(path.join(dir, 'hardware-history.json'), '{}')
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ MONITOR_INTERVAL_S: 30 }))
    const intents = [
      { id: 'node1', key: 'qwen3-32b-fp8', nodes: ['node1'] },
      { id: 'node2', key: 'gemma4-26b-a4b-nvfp4', nodes: ['node2'] },
    ]
    fs.writeFileSync(path.join(dir, 'placement-intent.json'), JSON.stringify({ intents, jobs: [], stops: [] }))
  }

  const ready = (d: DemoData | string): DemoData => {
    if (typeof d === 'string') throw new Error(d)
    return d
  }

  it('DEMO_FRESH: 1 starts clean, unset or 0 keeps the state, anything else is refused', () => {
    expect(demoFresh(undefined)).toBe(false)
    expect(demoFresh('')).toBe(false)
    expect(demoFresh('0')).toBe(false)
    expect(demoFresh('1')).toBe(true)
    expect(demoFresh('yes')).toMatch(/^DEMO_FRESH must be 1 \(start clean\) or 0/)
  })

  it('a first run says the directory is new and how to start clean later', () => {
    const d = ready(prepareDemoData(dir, false))
    expect(d.state).toBe('new')
    expect(fs.existsSync(path.join(dir, DEMO_MARKER))).toBe(true)
    expect(demoDataLines(d)).toEqual([
      `  Data:        ${dir}`,
      '               new: nothing from a previous run; kept for the next',
      '               DEMO_FRESH=1 npm run demo starts clean',
    ])
  })

  it("a second run says it carries the previous run's placements and settings, and keeps them", () => {
    previousRun()
    const d = ready(prepareDemoData(dir, false))
    expect(d.state).toBe('kept')
    const lines = demoDataLines(d)
    expect(lines[0]).toBe(`  Data:        ${dir}`)
    expect(lines[1]).toBe(
      '               kept from the previous run: placements (qwen3-32b-fp8 on node1, gemma4-26b-a4b-nvfp4 on node2), ' +
        "1 saved setting (settings.json), the charts and connectivity history, the shop's sales, the admin token",
    )
    expect(lines[2]).toBe('               DEMO_FRESH=1 npm run demo starts clean')
    expect(fs.existsSync(path.join(dir, 'placement-intent.json'))).toBe(true)
  })

  it('DEMO_FRESH=1 empties a demo directory, and says so', () => {
    previousRun()
    const d = ready(prepareDemoData(dir, true))
    expect(d.state).toBe('emptied')
    expect(fs.readdirSync(dir)).toEqual([DEMO_MARKER])
    expect(demoDataLines(d)[1]).toBe('               emptied (DEMO_FRESH=1): this run starts clean; kept for the next')
    // The next run without DEMO_FRESH finds nothing to carry.
    expect(demoDataLines(ready(prepareDemoData(dir, false)))[1]).toContain('nothing from a previous run')
  })

  it("DEMO_FRESH=1 never empties a directory that is not a demo's", () => {
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'thesis.tex'), 'years of work')
    const d = prepareDemoData(dir, true)
    expect(d).toMatch(/^DEMO_FRESH=1 empties only a demo's data directory, and .* is not one/)
    expect(fs.readFileSync(path.join(dir, 'thesis.tex'), 'utf8')).toBe('years of work')
  })

  it('writes the cluster settings for tandem doctor and prints the command that reads them', () => {
    ready(prepareDemoData(dir, false))
    const env = { NODE1_HOST: '127.0.0.1', NODE1_SSH_PORT: '40001', NODES: 'spark@127.0.0.3:40003,spark@127.0.0.4:1' }
    const file = writeDemoEnv(dir, env)
    expect(file).toBe(path.join(dir, DEMO_ENV_FILE))
    expect(parseEnv(fs.readFileSync(file, 'utf8'))).toEqual(env)
    expect(fs.statSync(file).mode & 0o077).toBe(0)
    expect(demoDoctorCommand(dir)).toBe(`npx tandem doctor --data-dir ${dir} --env-file ${file}`)
    expect(demoDoctorCommand('/tmp/my demo')).toBe(
      "npx tandem doctor --data-dir '/tmp/my demo' --env-file '/tmp/my demo/demo.env'",
    )
  })
})
