import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { SETTING_NAMES, SETTINGS, type SettingSpec } from '../../../src-main/config/settingSpecs'
import { settingValidators } from '../../../src-main/config/settingValidators'
import { startDaemon } from '../../helpers/daemon'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-config-num-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string> = {}) => loadConfig({ env: { DATA_DIR: dir, ...env } })

/** Spec 1, 2.1 rule 3: a numeric value is decimal digits; anything else is the default, reported once. */
describe('numeric settings accept decimal digits only', () => {
  const malformed = ['0x2328', '1e3', '9000abc', '-1', '70000', '0b10', '0o17', '9000.0', '+9000', '9_000', 'Infinity']

  for (const raw of malformed) {
    it(`LLM_PORT=${JSON.stringify(raw)} falls back to 8888 with one warning`, () => {
      const c = load({ LLM_PORT: raw })
      expect(c.llm.port).toBe(8888)
      expect(c.settings.LLM_PORT.source).toBe('default')
      expect(c.warnings.filter((w) => w.startsWith('LLM_PORT'))).toHaveLength(1)
    })
  }

  it('surrounding whitespace is allowed; blank is unset without a warning', () => {
    const c = load({ LLM_PORT: ' 9000 ' })
    expect(c.llm.port).toBe(9000)
    expect(c.warnings).toEqual([])
    const blank = load({ LLM_PORT: '' })
    expect(blank.llm.port).toBe(8888)
    expect(blank.warnings).toEqual([])
  })

  it('the same rule holds for the settings file', () => {
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ ASR_PORT: '0x2328', SWAP_HOLD_S: 1e3 }))
    const c = load()
    expect(c.asr.port).toBe(9000)
    // A JSON number is a number, whatever notation wrote it.
    expect(c.models.holdS).toBe(1000)
    expect(c.warnings.filter((w) => w.startsWith('ASR_PORT'))).toHaveLength(1)
  })

  it('every port and whole-number setting refuses hex, exponents and fractions and honours its range', () => {
    const numeric = SETTING_NAMES.filter((n) => ['port', 'int'].includes((SETTINGS[n] as SettingSpec).kind))
    expect(numeric.length).toBeGreaterThan(10)
    for (const name of numeric) {
      const spec: SettingSpec = SETTINGS[name]
      const [min, max] = spec.kind === 'port' ? [1, 65535] : (spec.range ?? [0, Number.MAX_SAFE_INTEGER])
      const v = settingValidators[name]
      // A blank default means "falls back to another setting" and is never validated.
      if (spec.default !== '') expect(v.safeParse(spec.default).success, `${name} default`).toBe(true)
      for (const ok of [String(min), String(max)]) expect(v.safeParse(ok).success, `${name}=${ok}`).toBe(true)
      for (const bad of ['0x10', '1e1', '1.0', '-0', String(max + 1), ...(min > 0 ? [String(min - 1)] : [])])
        expect(v.safeParse(bad).success, `${name}=${bad}`).toBe(false)
    }
  })

  it('a malformed number never stops the daemon; it is reported once in the log', async () => {
    const daemon = await startDaemon({ env: { LLM_PORT: '0x2328', MONITOR_INTERVAL_S: '1e3' }, start: false })
    try {
      expect(daemon.core.config.llm.port).toBe(8888)
      expect(daemon.core.config.monitorIntervalS).toBe(60)
      const lines = daemon.logs.lines.filter((l) => /WARN/.test(l))
      expect(lines.filter((l) => l.includes('LLM_PORT'))).toHaveLength(1)
      expect(lines.filter((l) => l.includes('MONITOR_INTERVAL_S'))).toHaveLength(1)
    } finally {
      await daemon.stop()
    }
  })
})
