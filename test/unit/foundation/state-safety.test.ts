import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig, readSettingsFile, writeSettings } from '../../../src-main/config/load'
import { SETTING_NAMES } from '../../../src-main/config/settingSpecs'
import { atomicWriteFile, removeOrphanedTempFiles } from '../../../src-main/lib/files'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-safety-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string> = {}) => loadConfig({ env: { DATA_DIR: dir, ...env } })

describe('null and blank values are unset for every setting', () => {
  it('NODE1_USER=null and TTS_HOST=null from the environment are unset, not the string "null"', () => {
    const c = load({ NODE1_HOST: '10.0.0.1', NODE1_USER: 'null', TTS_HOST: 'null', NODE2_HOST: 'speech.lan' })
    expect(c.nodes.node1).toBeNull()
    expect(c.settings.NODE1_USER).toEqual({ value: '', source: 'default' })
    expect(c.settings.TTS_HOST.source).toBe('default')
    expect(c.tts.ssh).toBeNull() // NODE2_USER unset, so no tts target at all
    expect(c.warnings).toEqual([])
  })

  it('every setting treats null, NULL, Null and blank as unset, in the environment and the settings file', () => {
    for (const raw of ['null', 'NULL', 'Null', ' null ', '', '   ']) {
      const env = Object.fromEntries(SETTING_NAMES.map((n) => [n, raw]))
      const c = load(env)
      for (const n of SETTING_NAMES) expect(c.settings[n].source, `${n}=${JSON.stringify(raw)}`).toBe('default')
      expect(c.warnings).toEqual([])
      fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(env))
      const f = load()
      for (const n of SETTING_NAMES) expect(f.settings[n].source, `file ${n}=${JSON.stringify(raw)}`).toBe('default')
      fs.rmSync(path.join(dir, 'settings.json'))
    }
  })

  it('a null value falls through to the settings file', () => {
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ TTS_HOST: 'speech.lan' }))
    const c = load({ TTS_HOST: 'NULL' })
    expect(c.settings.TTS_HOST).toEqual({ value: 'speech.lan', source: 'file' })
  })

  it('saving null from the Settings page removes the setting, like a blank value', () => {
    const c = load()
    expect(writeSettings(c, { TTS_HOST: 'speech.lan', LLM_PORT: '8001' }).errors).toEqual([])
    expect(writeSettings(c, { TTS_HOST: 'NULL' }).saved).toEqual(['TTS_HOST'])
    expect(JSON.parse(fs.readFileSync(c.paths.settingsFile, 'utf8'))).toEqual({ LLM_PORT: '8001' })
  })

  it('DATA_DIR=null is unset too', () => {
    const c = loadConfig({ env: { DATA_DIR: 'null' }, dataDir: dir })
    expect(c.paths.dataDir).toBe(dir)
  })
})

describe('setting names are looked up as own properties only', () => {
  it('the settings file ignores __proto__, constructor and toString with a warning', () => {
    fs.writeFileSync(
      path.join(dir, 'settings.json'),
      '{"__proto__": "x", "constructor": "y", "toString": "z", "hasOwnProperty": "w", "LLM_PORT": "8001"}',
    )
    const warnings: string[] = []
    const values = readSettingsFile(path.join(dir, 'settings.json'), warnings)
    expect(Object.keys(values)).toEqual(['LLM_PORT'])
    expect(warnings).toHaveLength(4)
    expect(warnings.join('\n')).toMatch(/__proto__/)
    expect(load().llm.port).toBe(8001)
  })

  it('writeSettings refuses __proto__, constructor and toString by name and writes nothing', () => {
    const c = load()
    const changes = JSON.parse('{"__proto__": "x", "constructor": "y", "toString": "z"}') as Record<string, string>
    const res = writeSettings(c, changes as never)
    expect(res.errors.map((e) => e.name).sort()).toEqual(['__proto__', 'constructor', 'toString'])
    expect(res.errors.every((e) => e.message === 'unknown setting')).toBe(true)
    expect(fs.existsSync(c.paths.settingsFile)).toBe(false)
  })
})

describe('paths from settings stay inside DATA_DIR', () => {
  it('refuses CONNECTIVITY_LOG outside DATA_DIR with a warning and uses the default', () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-outside-'))
    try {
      const c = load({
        CONNECTIVITY_LOG: path.join(outside, 'victim.json'),
        MODELS_OVERRIDES: `${dir}/../${path.basename(outside)}/m.yaml`,
        SERVICES_OVERRIDES: '/etc/passwd',
      })
      expect(c.paths.connectivityLog).toBe(path.join(dir, 'connectivity.json'))
      expect(c.paths.modelsOverrides).toBe(path.join(dir, 'models-overrides.yaml'))
      expect(c.paths.servicesOverrides).toBe(path.join(dir, 'services-overrides.yaml'))
      expect(c.warnings.filter((w) => /inside the data directory/.test(w))).toHaveLength(3)
      expect(c.settings.CONNECTIVITY_LOG.source).toBe('default')
    } finally {
      fs.rmSync(outside, { recursive: true, force: true })
    }
  })

  it('accepts a path inside DATA_DIR, normalised', () => {
    const c = load({ CONNECTIVITY_LOG: `${dir}/state/../state/conn.json` })
    expect(c.paths.connectivityLog).toBe(path.join(dir, 'state', 'conn.json'))
    expect(c.warnings).toEqual([])
  })

  it('refuses a symlink inside DATA_DIR that points outside (file or folder)', () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-outside-'))
    try {
      fs.writeFileSync(path.join(outside, 'victim.json'), 'precious')
      fs.symlinkSync(path.join(outside, 'victim.json'), path.join(dir, 'link.json'))
      fs.symlinkSync(outside, path.join(dir, 'linkdir'))
      const c = load({
        CONNECTIVITY_LOG: path.join(dir, 'link.json'),
        MODELS_OVERRIDES: path.join(dir, 'linkdir', 'new.yaml'),
      })
      expect(c.paths.connectivityLog).toBe(path.join(dir, 'connectivity.json'))
      expect(c.paths.modelsOverrides).toBe(path.join(dir, 'models-overrides.yaml'))
      expect(c.warnings.filter((w) => /inside the data directory/.test(w))).toHaveLength(2)
    } finally {
      fs.rmSync(outside, { recursive: true, force: true })
    }
  })

  it('the settings page refuses a path outside DATA_DIR when it is saved', () => {
    const c = load()
    const res = writeSettings(c, { CONNECTIVITY_LOG: '/etc/shadow' })
    expect(res.errors).toEqual([
      { name: 'CONNECTIVITY_LOG', message: expect.stringMatching(/inside the data directory/) },
    ])
    expect(fs.existsSync(c.paths.settingsFile)).toBe(false)
  })
})

describe('orphaned temp files of atomic writes', () => {
  it('removes only files named like an atomic write’s temp file, only in the folders given', () => {
    const sub = path.join(dir, 'ssh')
    fs.mkdirSync(sub)
    const orphan = path.join(dir, '.connectivity.json.0a1b2c3d4e5f.tmp')
    const orphan2 = path.join(sub, '.id_ed25519.ffffffffffff.tmp')
    const keep = [
      path.join(dir, 'notes.tmp'),
      path.join(dir, '.connectivity.json.xyz.tmp'),
      path.join(dir, 'connectivity.json'),
      path.join(dir, '.hidden'),
    ]
    const deeper = path.join(dir, 'other', '.x.json.0a1b2c3d4e5f.tmp')
    fs.mkdirSync(path.dirname(deeper))
    for (const f of [orphan, orphan2, ...keep, deeper]) fs.writeFileSync(f, 'x')
    const removed = removeOrphanedTempFiles([dir, sub, path.join(dir, 'missing')])
    expect(removed.sort()).toEqual([orphan, orphan2].sort())
    for (const f of [...keep, deeper]) expect(fs.existsSync(f)).toBe(true)
    expect(fs.existsSync(orphan)).toBe(false)
  })

  it('the temp name an atomic write uses is the one the cleaner removes', () => {
    const target = path.join(dir, 'state.json')
    const realRename = fs.renameSync
    let seen = ''
    // Simulate kill -9 between write and rename: keep the temp file, skip the rename.
    fs.renameSync = ((from: fs.PathLike) => {
      seen = String(from)
      throw new Error('killed')
    }) as typeof fs.renameSync
    const realRm = fs.rmSync
    fs.rmSync = (() => undefined) as typeof fs.rmSync
    try {
      expect(() => atomicWriteFile(target, '{}')).toThrow('killed')
    } finally {
      fs.renameSync = realRename
      fs.rmSync = realRm
    }
    expect(fs.existsSync(seen)).toBe(true)
    expect(removeOrphanedTempFiles([dir])).toEqual([seen])
  })
})

describe('configuration warnings', () => {
  it('never repeat a password from a URL that was refused', () => {
    const c = load({ PUBLIC_URL: 'ftp://op:warn-Secret@tandem.example' })
    expect(c.publicUrl).toBeNull()
    expect(c.warnings.join('\n')).toContain('ftp://op:***@tandem.example')
    expect(c.warnings.join('\n')).not.toContain('warn-Secret')
  })
})
