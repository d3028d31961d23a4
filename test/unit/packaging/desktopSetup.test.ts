import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { electronSqliteBinding, sqliteOptions, SQLITE_BINDING_ENV } from '../../../src-main/lib/nativeBinding'
// @ts-expect-error -- a plain .mjs script without type declarations
import { electronPin, NATIVE_DIR, prepareNativeApp } from '../../../scripts/desktop-setup.mjs'
// @ts-expect-error -- node-abi (what @electron/rebuild maps versions to ABIs with) ships no type declarations
import * as nodeAbi from 'node-abi'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-desktop-setup-'))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

function write(rel: string, text: string): string {
  const file = path.join(root, rel)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
  return file
}

/** Runs `fn` as if under Electron (process.versions.electron set). */
function asElectron<T>(fn: () => T): T {
  Object.defineProperty(process.versions, 'electron', { value: '45.5.0', configurable: true, enumerable: true })
  try {
    return fn()
  } finally {
    delete (process.versions as Record<string, string | undefined>).electron
  }
}

describe('npm run desktop:setup', () => {
  it('copies better-sqlite3 without its Node build into a separate app folder for @electron/rebuild', () => {
    write('node_modules/better-sqlite3/package.json', JSON.stringify({ name: 'better-sqlite3', version: '12.11.1' }))
    write('node_modules/better-sqlite3/src/better_sqlite3.cpp', '// source')
    const nodeBuild = write('node_modules/better-sqlite3/build/Release/better_sqlite3.node', 'built for Node')
    const target: string = prepareNativeApp(root)
    expect(NATIVE_DIR).toBe('.electron-native')
    expect(target).toBe(
      path.join(root, '.electron-native/node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
    )
    expect(fs.existsSync(path.join(root, '.electron-native/node_modules/better-sqlite3/src/better_sqlite3.cpp'))).toBe(
      true,
    )
    expect(fs.existsSync(path.join(root, '.electron-native/node_modules/better-sqlite3/build'))).toBe(false)
    expect(JSON.parse(fs.readFileSync(path.join(root, '.electron-native/package.json'), 'utf8')).dependencies).toEqual({
      'better-sqlite3': '12.11.1',
    })
    // node_modules keeps the Node build: headless mode and the tests still load it.
    expect(fs.readFileSync(nodeBuild, 'utf8')).toBe('built for Node')
  })

  it('the desktop shell loads the Electron build only under Electron and only when it exists', () => {
    expect(electronSqliteBinding(root)).toBeNull()
    const built = write(
      '.electron-native/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'electron build',
    )
    expect(electronSqliteBinding(root)).toBe(built)

    expect(sqliteOptions({ [SQLITE_BINDING_ENV]: built })).toEqual({})
    expect(asElectron(() => sqliteOptions({ [SQLITE_BINDING_ENV]: built }))).toEqual({ nativeBinding: built })
    expect(asElectron(() => sqliteOptions({}))).toEqual({})
    expect(asElectron(() => sqliteOptions({ [SQLITE_BINDING_ENV]: 'relative/x.node' }))).toEqual({})
    expect(asElectron(() => sqliteOptions({ [SQLITE_BINDING_ENV]: path.join(root, 'missing.node') }))).toEqual({})
  })
})

/** Electron on a supported major, pinned exactly, with its tools matched (issue 40, item 8). */
describe('the pinned Electron', () => {
  const repo = path.resolve(__dirname, '../../..')
  const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>
    allowScripts: Record<string, boolean>
  }

  it('is the current line (45, as of 2026-12), one exact version, installed as pinned, its download kept out of installs', () => {
    const pin = electronPin(repo) as { version: string; major: number; abi: string | null }
    expect(pin.version).toBe(pkg.devDependencies.electron)
    expect(pin.major).toBeGreaterThanOrEqual(45)
    expect(pkg.allowScripts.electron).toBe(false)
  })

  it('has an ABI that the installed @electron/rebuild knows, and electron-builder and @electron/rebuild pinned exactly', () => {
    const pin = electronPin(repo) as { version: string; abi: string | null }
    expect(pin.abi).not.toBeNull()
    expect((nodeAbi as { getAbi(v: string, runtime: string): string }).getAbi(pin.version, 'electron')).toBe(pin.abi)
    for (const tool of ['@electron/rebuild', 'electron-builder'])
      expect(pkg.devDependencies[tool], tool).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('desktop:setup refuses a range or an install that differs from the pin, naming both versions', () => {
    const fake = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-electron-pin-'))
    try {
      const put = (rel: string, v: unknown) => {
        fs.mkdirSync(path.dirname(path.join(fake, rel)), { recursive: true })
        fs.writeFileSync(path.join(fake, rel), JSON.stringify(v))
      }
      put('node_modules/electron/package.json', { name: 'electron', version: '45.5.0' })
      put('package.json', { devDependencies: { electron: '^45.0.0' } })
      expect(() => electronPin(fake)).toThrow(/exact version, not "\^45\.0\.0"/)
      put('package.json', { devDependencies: { electron: '45.4.1' } })
      expect(() => electronPin(fake)).toThrow(/pins Electron 45\.4\.1 but 45\.5\.0 is installed/)
      put('package.json', { devDependencies: { electron: '45.5.0' } })
      expect(electronPin(fake)).toMatchObject({ version: '45.5.0', major: 45, abi: null })
    } finally {
      fs.rmSync(fake, { recursive: true, force: true })
    }
  })
})
