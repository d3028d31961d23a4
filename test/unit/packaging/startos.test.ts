import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { T } from '@start9labs/start-sdk'
import pkg from '../../../package.json'
import { loadConfig } from '../../../src-main/config/load'
import { SETTINGS, type SettingName } from '../../../src-main/config/settingSpecs'
import { settingValidators } from '../../../src-main/config/settingValidators'
import { PACKAGE_REVISION, VERSION } from '../../../src-main/lib/version'
import { configSpec, daemonEnv, FIELD_PATTERNS, FIXED_ENV, type StoredConfig } from '../../../startos/config'
import { abi, manifest } from '../../../startos/index'
import { setInterfaces } from '../../../startos/interfaces'
import { webhookUrls } from '../../../startos/actions/showWebhookUrls'

/** Spec 000 §2.1, by environment name (rule 1: `<ROLE>_HOST`, `<ROLE>_USER`, `<ROLE>_CONTAINER`, llm port, registry key). */
const SPEC_2_1: readonly SettingName[] = [
  'NODE1_HOST',
  'NODE1_USER',
  'NODE2_HOST',
  'NODE2_USER',
  'ASR_HOST',
  'ASR_USER',
  'ASR_CONTAINER',
  'TTS_HOST',
  'TTS_USER',
  'TTS_CONTAINER',
  'LLM_PORT',
  'CHAT_UI_URL',
  'REGISTRY_API_KEY',
]
const REQUIRED = ['NODE1_HOST', 'NODE1_USER', 'NODE2_HOST', 'NODE2_USER']

const dataDirs: string[] = []
afterAll(() => {
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true })
})

/** An effects object that records what the package asks StartOS to do. */
function recordingEffects() {
  const calls: { method: string; params: Record<string, unknown> }[] = []
  const record = (method: string) => async (params: Record<string, unknown>) => {
    calls.push({ method, params })
    return null
  }
  const effects = {
    bind: record('bind'),
    exportServiceInterface: record('exportServiceInterface'),
    clearBindings: record('clearBindings'),
    clearServiceInterfaces: record('clearServiceInterfaces'),
  } as unknown as T.Effects
  return { effects, calls }
}

describe('StartOS package', () => {
  it('declares the version Tandem reports: package.json x.y.z plus the packaging revision', () => {
    expect(manifest.version).toBe(`${pkg.version}:${PACKAGE_REVISION}`)
    expect(manifest.version).toBe(VERSION)
    expect(manifest.id).toBe('tandem')
    expect(manifest.volumes).toEqual(['main'])
    expect(manifest.images.main?.source).toEqual({ dockerBuild: { dockerfile: 'Dockerfile', workdir: '.' } })
    expect(Object.keys(abi).sort()).toEqual(['actions', 'createBackup', 'init', 'main', 'manifest', 'uninit'])
  })

  it('publishes two interfaces on 9999: the web UI at the root and the API at /api/endpoints', async () => {
    const { effects, calls } = recordingEffects()
    await setInterfaces(effects)
    const binds = calls.filter((c) => c.method === 'bind')
    expect(binds).toHaveLength(1)
    expect(binds[0]?.params).toMatchObject({ internalPort: 9999 })
    const exported = calls
      .filter((c) => c.method === 'exportServiceInterface')
      .map((c) => ({
        id: c.params.id,
        type: c.params.type,
        path: (c.params.addressInfo as { suffix?: string })?.suffix,
      }))
    expect(exported).toEqual([
      { id: 'ui', type: 'ui', path: '' },
      { id: 'api', type: 'api', path: '/api/endpoints' },
    ])
  })

  it('the configuration form holds every spec §2.1 setting, each a Tandem setting, masked exactly where secret', async () => {
    const { spec } = await configSpec.build({ effects: recordingEffects().effects, prefill: null })
    const fields = spec as Record<string, { type: string; required: boolean; masked?: boolean }>
    expect(Object.keys(fields).sort()).toEqual([...SPEC_2_1].sort())
    for (const [name, field] of Object.entries(fields)) {
      expect(Object.hasOwn(SETTINGS, name), name).toBe(true)
      const secret = (SETTINGS[name as SettingName] as { secret?: boolean }).secret === true
      if (field.type === 'text') expect(field.masked, name).toBe(secret)
      else expect(secret, name).toBe(false)
      expect(field.required, name).toBe(REQUIRED.includes(name))
    }
    expect(fields.REGISTRY_API_KEY?.masked).toBe(true)
    expect(fields.LLM_PORT?.type).toBe('number')
  })

  it('the form refuses what the daemon would refuse: its patterns agree with the settings validators', () => {
    const samples: [keyof typeof FIELD_PATTERNS, SettingName, string[]][] = [
      ['host', 'NODE1_HOST', ['192.168.1.11', 'spark-a1.lan', 'fd00::1', 'a b', 'host;reboot', '$(id)']],
      ['user', 'NODE1_USER', ['spark', '_svc', 'Root', 'a b', "o'neil", '1abc']],
      ['container', 'ASR_CONTAINER', ['asr', 'vllm_node', '-x', 'a b', 'a/b']],
      ['url', 'CHAT_UI_URL', ['http://chat.lan:3000', 'https://x.example', 'ftp://x', 'javascript:alert(1)']],
    ]
    for (const [pattern, setting, values] of samples)
      for (const v of values) {
        const form = new RegExp(FIELD_PATTERNS[pattern].regex).test(v)
        expect(form, `${pattern} ${v}`).toBe(settingValidators[setting].safeParse(v).success)
      }
  })

  it('passes the form to the daemon as environment: blanks and nulls as empty strings, which take their fallbacks', () => {
    const stored: StoredConfig = {
      NODE1_HOST: '10.0.0.11',
      NODE1_USER: 'spark',
      NODE2_HOST: '10.0.0.12',
      NODE2_USER: 'ops',
      ASR_HOST: null,
      ASR_USER: null,
      ASR_CONTAINER: null,
      TTS_HOST: '10.0.0.13',
      TTS_USER: null,
      TTS_CONTAINER: 'tts-custom',
      LLM_PORT: null,
      CHAT_UI_URL: null,
      REGISTRY_API_KEY: 'reg-secret-key',
    }
    const env = daemonEnv(stored)
    expect(env).toMatchObject(FIXED_ENV)
    for (const name of SPEC_2_1) expect(typeof env[name], name).toBe('string')
    expect(env.ASR_HOST).toBe('')
    expect(env.LLM_PORT).toBe('')
    expect(env.REGISTRY_API_KEY).toBe('reg-secret-key')
    expect(Object.values(daemonEnv(null)).filter((v) => v !== '')).toEqual(Object.values(FIXED_ENV))

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-startos-'))
    dataDirs.push(dataDir)
    // The container's /data, here a temp directory: the fixed paths move with it.
    const inContainer = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, v.replace(/^\/data(?=\/|$)/, dataDir)]),
    )
    const config = loadConfig({ env: inContainer })
    expect(config.warnings).toEqual([])
    expect(config.asr.ssh).toMatchObject({ host: '10.0.0.12', user: 'ops' })
    expect(config.asr.container).toBe('asr')
    expect(config.tts.ssh).toMatchObject({ host: '10.0.0.13', user: 'ops' })
    expect(config.tts.container).toBe('tts-custom')
    expect(config.llm.port).toBe(8888)
    expect(config.registryApiKey).toBe('reg-secret-key')
    expect(config.paths.connectivityLog).toBe(path.join(dataDir, 'connectivity.json'))
    expect(config.paths.dataDir).toBe(dataDir)
    expect(config.port).toBe(9999)
  })

  it('names the licensing webhook URL of each provider for every address of the web interface', () => {
    expect(webhookUrls(['http://tandem.local:9999/', 'http://abc.onion'])).toEqual([
      {
        provider: 'BTCPay Server',
        urls: ['http://tandem.local:9999/v1/btcpay/webhook', 'http://abc.onion/v1/btcpay/webhook'],
      },
      {
        provider: 'Zaprite',
        urls: ['http://tandem.local:9999/v1/zaprite/webhook', 'http://abc.onion/v1/zaprite/webhook'],
      },
    ])
  })
})
