import fs from 'node:fs'
import path from 'node:path'

/**
 * `npm run desktop:setup` builds better-sqlite3 for Electron's ABI into this folder of the source
 * checkout, leaving node_modules built for Node so headless mode and the tests keep working.
 */
export const ELECTRON_NATIVE_DIR = '.electron-native'
/** Set by the desktop shell, read where the licensing database is opened. */
export const SQLITE_BINDING_ENV = 'TANDEM_SQLITE_BINDING'

/** The Electron build of better-sqlite3 in a source checkout, or null (packaged apps have theirs in place). */
export function electronSqliteBinding(appRoot: string): string | null {
  const file = path.join(
    appRoot,
    ELECTRON_NATIVE_DIR,
    'node_modules',
    'better-sqlite3',
    'build',
    'Release',
    'better_sqlite3.node',
  )
  return fs.existsSync(file) ? file : null
}

/**
 * better-sqlite3's options for this process: under Electron, the binding the desktop shell named
 * (an absolute path to an existing `.node` file); nothing otherwise.
 */
export function sqliteOptions(env: NodeJS.ProcessEnv = process.env): { nativeBinding?: string } {
  const file = env[SQLITE_BINDING_ENV]
  if (!process.versions.electron || !file) return {}
  if (!path.isAbsolute(file) || !file.endsWith('.node') || !fs.existsSync(file)) return {}
  return { nativeBinding: file }
}
