import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { electronSqliteBinding, sqliteOptions, SQLITE_BINDING_ENV } from '../../../src-main/lib/nativeBinding'
// @ts-expect-error -- a plain .mjs script without type declarations
import { NATIVE_DIR, prepareNativeApp } from '../../../scripts/desktop-setup.mjs'

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
  Object.defineProperty(process.versions, 'electron', { value: '41.7.1', configurable: true, enumerable: true })
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
