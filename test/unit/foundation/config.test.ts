import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig, settingsView, writeSettings } from '../../../src-main/config/load'
import { keptAsideCopy } from '../../helpers/keptAside'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-config-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string> = {}) => loadConfig({ env: { DATA_DIR: dir, ...env } })

describe('configuration', () => {
  it('uses the built-in defaults when nothing is set', () => {
    const c = load()
    expect(c.port).toBe(9999)
    expect(c.bind).toBe('0.0.0.0')
    expect(c.llm).toEqual({ port: 8888, container: 'vllm_node', launcherDir: '$HOME/spark-vllm-docker' })
    expect(c.nodes.node1).toBeNull()
    expect(c.asr.container).toBe('asr')
    expect(c.tts.port).toBe(9001)
    expect(c.paths.connectivityLog).toBe(path.join(dir, 'connectivity.json'))
    expect(c.settings.PORT.source).toBe('default')
    expect(c.warnings).toEqual([])
  })

  it('layers default < settings file < environment', () => {
    fs.writeFileSync(
      path.join(dir, 'settings.json'),
      JSON.stringify({ LLM_PORT: '8000', CHAT_UI_URL: 'http://chat.lan:3000' }),
    )
    const c = load({ LLM_PORT: '8100' })
    expect(c.llm.port).toBe(8100)
    expect(c.settings.LLM_PORT.source).toBe('environment')
    expect(c.chatUiUrl).toBe('http://chat.lan:3000')
    expect(c.settings.CHAT_UI_URL.source).toBe('file')
  })

  it('treats blank and null values as unset', () => {
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ ASR_CONTAINER: null, TTS_CONTAINER: '' }))
    const c = load({ LLM_PORT: '   ', ASR_CONTAINER: '' })
    expect(c.llm.port).toBe(8888)
    expect(c.asr.container).toBe('asr')
    expect(c.tts.container).toBe('tts')
    expect(c.warnings).toEqual([])
  })

  it('falls back to the default with one warning on a malformed number', () => {
    const c = load({ LLM_PORT: 'abc', DEEP_HEALTH_INTERVAL_S: '-5' })
    expect(c.llm.port).toBe(8888)
    expect(c.deepHealthIntervalS).toBe(300)
    expect(c.warnings.filter((w) => w.startsWith('LLM_PORT'))).toHaveLength(1)
    expect(c.warnings.some((w) => w.startsWith('DEEP_HEALTH_INTERVAL_S'))).toBe(true)
  })

  it('falls back to a lower source when the higher one is malformed', () => {
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ LLM_PORT: 8001 }))
    const c = load({ LLM_PORT: '99999' })
    expect(c.llm.port).toBe(8001)
    expect(c.settings.LLM_PORT.source).toBe('file')
  })

  it('gives asr and tts node2’s host, user and SSH port when their own are blank', () => {
    const c = load({
      NODE2_HOST: '10.0.0.2',
      NODE2_USER: 'spark',
      NODE2_SSH_PORT: '2202',
      TTS_HOST: 'speech.lan',
      TTS_USER: 'ops',
    })
    expect(c.asr.ssh).toEqual({ host: '10.0.0.2', user: 'spark', port: 2202 })
    expect(c.tts.ssh).toEqual({ host: 'speech.lan', user: 'ops', port: 22 })
  })

  it('keeps a corrupt settings file aside and starts on defaults', () => {
    fs.writeFileSync(path.join(dir, 'settings.json'), '{"PORT": 12')
    const c = load()
    expect(c.port).toBe(9999)
    const keptAs = keptAsideCopy(path.join(dir, 'settings.json'))
    expect(keptAs).not.toBeNull()
    expect(fs.existsSync(path.join(dir, 'settings.json'))).toBe(false)
    expect(c.warnings.some((w) => w.includes(`moved aside to ${keptAs}`))).toBe(true)
  })

  it('rejects a host with shell metacharacters', () => {
    const c = load({ NODE1_HOST: 'node1;rm -rf /', NODE1_USER: 'spark' })
    expect(c.nodes.node1).toBeNull()
    expect(c.warnings.some((w) => w.startsWith('NODE1_HOST'))).toBe(true)
  })

  it('masks secrets in the settings view and never echoes a bad secret in a warning', () => {
    const c = load({ REGISTRY_API_KEY: 'nvapi-very-secret-value', ADMIN_TOKEN: 'short' })
    const view = settingsView(c)
    const reg = view.find((s) => s.name === 'REGISTRY_API_KEY')
    expect(reg?.value).not.toContain('secret')
    expect(reg?.secret).toBe(true)
    expect(c.warnings.join('\n')).not.toContain('short')
  })

  it('saves edits atomically with mode 0600 and refuses values fixed by the environment', () => {
    const c = load({ PORT: '9100' })
    const bad = writeSettings(c, { PORT: '9200', LLM_PORT: '8001' })
    expect(bad.errors.map((e) => e.name)).toEqual(['PORT'])
    expect(fs.existsSync(c.paths.settingsFile)).toBe(false)
    const invalid = writeSettings(c, { LLM_PORT: 'eighty' })
    expect(invalid.errors[0]?.name).toBe('LLM_PORT')
    const ok = writeSettings(c, { LLM_PORT: '8001', CHAT_UI_URL: 'http://chat.lan' })
    expect(ok.saved).toEqual(['LLM_PORT', 'CHAT_UI_URL'])
    expect(JSON.parse(fs.readFileSync(c.paths.settingsFile, 'utf8'))).toEqual({
      LLM_PORT: '8001',
      CHAT_UI_URL: 'http://chat.lan',
    })
    expect(fs.statSync(c.paths.settingsFile).mode & 0o777).toBe(0o600)
    expect(load().llm.port).toBe(8001)
  })
})
