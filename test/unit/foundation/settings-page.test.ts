import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkSettingChanges, loadConfig, settingsView, type Config } from '../../../src-main/config/load'
import { SETTINGS, SETTING_NAMES, type SettingSpec } from '../../../src-main/config/settingSpecs'
import { settingGroup, settingLabel } from '../../../src-main/config/settingView'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-settings-page-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string> = {}) => loadConfig({ env: { DATA_DIR: dir, ...env } })

describe('Settings page metadata', () => {
  it('groups every setting by purpose, with a human label and one line of help', () => {
    const view = settingsView(load())
    const groups = new Set(view.map((s) => s.group))
    expect([...groups].sort()).toEqual(['advanced', 'gateway', 'licensing', 'nodes', 'security', 'services'])
    for (const s of view) {
      expect(s.label).not.toMatch(/^[A-Z0-9_]+$/)
      expect(s.help.length).toBeGreaterThan(0)
      expect(s.help).not.toContain('\n')
    }
    expect(view.find((s) => s.name === 'LICENSING_RATE_LIMIT')).toMatchObject({
      group: 'licensing',
      label: 'Public API requests per minute',
      range: [0, 1_000_000],
    })
    expect(view.find((s) => s.name === 'ADMIN_TOKEN')?.group).toBe('security')
  })

  it('reads entries written in the first layout: old groups as Advanced, a label from the name', () => {
    const old: SettingSpec = { group: 'server', kind: 'string', default: '', description: 'An older entry' }
    expect(settingGroup(old)).toBe('advanced')
    expect(settingGroup({ ...old, group: 'paths' })).toBe('advanced')
    expect(settingLabel('FOO_BAR_URL', old)).toBe('Foo bar url')
  })

  it('says why an environment-locked setting is locked', () => {
    const view = settingsView(load({ LLM_PORT: '8100' }))
    const llm = view.find((s) => s.name === 'LLM_PORT')
    expect(llm).toMatchObject({ editable: false, source: 'environment' })
    expect(llm?.locked_reason).toContain('environment variable LLM_PORT')
    expect(view.find((s) => s.name === 'ASR_PORT')?.locked_reason).toBeNull()
  })

  it('words each problem for a person instead of raw schema text', () => {
    const errors = checkSettingChanges(load({ LLM_PORT: '8100' }), {
      LICENSING_RATE_LIMIT: 'abc',
      SWAP_HOLD_S: '1.5',
      ASR_PORT: '70000',
      CHAT_UI_URL: 'ftp://x',
      SWAP_ROLLBACK: 'maybe',
      LLM_PORT: '8001',
      SCRUB_TERMS: 'fine',
    })
    expect(errors).toEqual([
      { name: 'LICENSING_RATE_LIMIT', message: 'must be a whole number between 0 and 1000000' },
      { name: 'SWAP_HOLD_S', message: 'must be a whole number between 0 and 86400' },
      { name: 'ASR_PORT', message: 'must be a whole number between 1 and 65535 (a port)' },
      { name: 'CHAT_UI_URL', message: 'must be an http:// or https:// address' },
      { name: 'SWAP_ROLLBACK', message: 'must be on or off' },
      { name: 'LLM_PORT', message: 'set by the environment; change it there' },
    ])
    for (const e of errors) expect(e.message).not.toMatch(/Invalid input|expected|received|NaN/)
  })
})

/** A usable value different from the default, per setting (paths stay inside DATA_DIR). */
const SAMPLE: Record<string, string> = {
  PORT: '9100',
  BIND: '127.0.0.1',
  PUBLIC_URL: 'https://shop.example',
  ADMIN_TOKEN: 'an-admin-token-of-some-length',
  CONSUMER_API_KEYS: 'k1',
  TRUSTED_PROXIES: '10.0.0.1',
  PLAYGROUND_SESSION_UPLOADS: 'on',
  CHAT_UI_URL: 'http://chat.lan:1',
  NODE1_HOST: 'h9',
  NODE1_USER: 'v',
  NODE1_SSH_PORT: '2222',
  NODE2_HOST: 'h8',
  NODE2_USER: 'v',
  NODE2_SSH_PORT: '2223',
  NODES: 'ops@spark3,ops@spark4:2222',
  WOL_BROADCAST: '10.0.0.255',
  MONITOR_INTERVAL_S: '5',
  LLM_PORT: '8001',
  LLM_CONTAINER: 'other',
  LAUNCHER_DIR: '/opt/launcher',
  ASR_HOST: 'h7',
  ASR_USER: 'w',
  ASR_SSH_PORT: '2224',
  ASR_CONTAINER: 'asr2',
  ASR_PORT: '9002',
  TTS_HOST: 'h6',
  TTS_USER: 'w',
  TTS_SSH_PORT: '2225',
  TTS_CONTAINER: 'tts2',
  TTS_PORT: '9003',
  REGISTRY_API_KEY: 'rk',
  LOCAL_MODEL_ROOTS: '/srv',
  SWAP_LOAD_TIMEOUT_S: '60',
  SWAP_HOLD_S: '5',
  SWAP_ROLLBACK: 'off',
  SWAP_ON_DEMAND: 'on',
  PLACEMENT_RECOVERY: 'off',
  PLACEMENT_IDLE_TTL_MIN: '45',
  DEEP_HEALTH_INTERVAL_S: '20',
  ENGINE_METRICS_INTERVAL_S: '30',
  ENGINE_METRICS_FAMILIES: 'all',
  EMBEDDINGS_URL: 'http://e.lan:1',
  VECTOR_URL: 'http://v.lan:1',
  SCRUB_TERMS: 'Falcon',
  TTS_VOICE_ALIASES: 'alloy=Multivoice.EN-US.Aria',
  RATE_SOURCES: 'http://rates.lan:1',
  LICENSING_RATE_LIMIT: '5',
  GATEWAY_UPLOAD_MAX_MB: '512',
  GATEWAY_UPLOAD_IDLE_S: '30',
  GATEWAY_BODY_IDLE_S: '20',
  GATEWAY_SPOOL_MB: '1024',
  GATEWAY_DISK_FLOOR_MB: '256',
  GATEWAY_TIMEOUT_MIN: '45',
  GATEWAY_BODY_BUDGET_MB: '128',
  REDIRECT_ALLOWLIST: 'https://shop.example',
  DISCOUNT_RESERVATION_MINUTES: '45',
  VALIDATION_LOG_RETENTION_DAYS: '30',
  VALIDATION_LOG_MAX_ROWS: '5000',
  LICENSING_BACKUPS: '3',
  METRICS_TOKEN: 'metrics-token-0123456789',
}
const PATH_SAMPLE: Record<string, string> = {
  CONNECTIVITY_LOG: 'c.json',
  MODELS_OVERRIDES: 'm.yaml',
  SERVICES_OVERRIDES: 's.yaml',
}

const srcMain = path.join(__dirname, '../../../src-main')
function sourcesOutsideConfig(): string {
  const out: string[] = []
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name)
      if (e.isDirectory() && e.name !== 'config') walk(p)
      else if (e.isFile() && p.endsWith('.ts')) out.push(fs.readFileSync(p, 'utf8'))
    }
  }
  walk(srcMain)
  return out.join('\n')
}

describe('settings the page offers are read', () => {
  it('every shown setting changes the configuration modules are built from, or is read by name', () => {
    const base = { NODE1_USER: 'u', NODE2_USER: 'u', NODE1_HOST: 'a', NODE2_HOST: 'b' }
    const withoutRaw = (c: Config) => JSON.stringify({ ...c, settings: null, warnings: null })
    const reference = withoutRaw(load(base))
    const sources = sourcesOutsideConfig()
    const shown = settingsView(load(base)).map((s) => s.name)
    expect(shown.length).toBe(SETTING_NAMES.filter((n) => (SETTINGS[n] as SettingSpec).unread !== true).length)
    const unread = shown.filter((name) => {
      const sample = SAMPLE[name] ?? (PATH_SAMPLE[name] && path.join(dir, PATH_SAMPLE[name]))
      if (sample === undefined) return true
      const changed = withoutRaw(load({ ...base, [name]: sample })) !== reference
      return !changed && !sources.includes(`settings.${name}`)
    })
    expect(unread).toEqual([])
  })
})
