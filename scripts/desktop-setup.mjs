#!/usr/bin/env node
// `npm run desktop:setup`: what `npm run desktop` needs beyond `npm ci`, which deliberately skips it
// (package.json allowScripts keeps Electron's download out of installs, and node_modules stays built
// for Node so headless mode and the tests keep working):
//   1. Electron's own installer downloads the Electron binary for this platform;
//   2. @electron/rebuild builds better-sqlite3 for Electron's ABI into .electron-native/, a separate
//      folder the desktop shell loads it from.
// Installers built by electron-builder do the native rebuild themselves and need none of this.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const NATIVE_DIR = '.electron-native'
const NATIVE_MODULE = 'better-sqlite3'

/**
 * A small app folder holding a copy of better-sqlite3's sources (not its Node build), which
 * @electron/rebuild then compiles for Electron. Returns where the Electron build will be.
 */
export function prepareNativeApp(root) {
  const source = path.join(root, 'node_modules', NATIVE_MODULE)
  const version = JSON.parse(fs.readFileSync(path.join(source, 'package.json'), 'utf8')).version
  const dir = path.join(root, NATIVE_DIR)
  const target = path.join(dir, 'node_modules', NATIVE_MODULE)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(path.dirname(target), { recursive: true })
  const nodeBuild = path.join(source, 'build')
  fs.cpSync(source, target, { recursive: true, filter: (p) => p !== nodeBuild && !p.startsWith(nodeBuild + path.sep) })
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify(
      { name: 'tandem-electron-native', private: true, dependencies: { [NATIVE_MODULE]: version } },
      null,
      2,
    ),
  )
  return path.join(target, 'build', 'Release', 'better_sqlite3.node')
}

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'))

/**
 * The Electron this checkout builds for: the exact version package.json pins, which must be the one
 * installed (a range, or an install of another version, would build better-sqlite3 for the wrong ABI).
 */
export function electronPin(root) {
  const pkg = readJson(path.join(root, 'package.json'))
  const pinned = pkg.devDependencies?.electron ?? pkg.dependencies?.electron
  if (typeof pinned !== 'string' || !/^\d+\.\d+\.\d+$/.test(pinned))
    throw new Error(`package.json must pin electron to one exact version, not ${JSON.stringify(pinned ?? null)}`)
  const electronDir = path.join(root, 'node_modules', 'electron')
  const installed = readJson(path.join(electronDir, 'package.json')).version
  if (installed !== pinned)
    throw new Error(`package.json pins Electron ${pinned} but ${installed} is installed: run npm ci first`)
  const abiFile = path.join(electronDir, 'abi_version')
  const abi = fs.existsSync(abiFile) ? fs.readFileSync(abiFile, 'utf8').trim() : null
  return { version: pinned, major: Number(pinned.split('.')[0]), abi, electronDir }
}

async function main() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
  const require = createRequire(path.join(root, 'package.json'))
  const pin = electronPin(root)
  const { electronDir, version: electronVersion } = pin

  process.stdout.write(
    `Electron ${electronVersion} (pinned in package.json${pin.abi ? `, native ABI ${pin.abi}` : ''})\n` +
      `1/2 Electron ${electronVersion}: running its installer (downloads the binary for ${process.platform}-${process.arch})\n`,
  )
  const env = { ...process.env }
  delete env.ELECTRON_SKIP_BINARY_DOWNLOAD
  const install = spawnSync(process.execPath, [path.join(electronDir, 'install.js')], {
    stdio: 'inherit',
    env,
    cwd: electronDir,
  })
  if (install.status !== 0)
    throw new Error(`Electron ${electronVersion}'s installer failed (exit ${install.status ?? install.signal})`)
  const binary = require('electron')
  if (typeof binary !== 'string' || !fs.existsSync(binary))
    throw new Error('the Electron binary is still missing after its installer ran')
  process.stdout.write(`    ${binary}\n`)

  process.stdout.write(`2/2 ${NATIVE_MODULE}: building for Electron ${electronVersion} into ${NATIVE_DIR}/\n`)
  const built = prepareNativeApp(root)
  const { rebuild } = require('@electron/rebuild')
  // better-sqlite3 13 ships prebuilt binaries, and its binding.gyp compiles nothing when one exists
  // for the host; force_build (read by node-gyp from npm_config_*) makes it compile for Electron.
  process.env.npm_config_force_build = '1'
  await rebuild({
    buildPath: path.join(root, NATIVE_DIR),
    electronVersion,
    onlyModules: [NATIVE_MODULE],
    force: true,
  })
  if (!fs.existsSync(built)) throw new Error(`${built} was not produced`)
  process.stdout.write(`    ${built}\n\nReady: npm run desktop\n`)
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  main().catch((err) => {
    process.stderr.write(`desktop:setup failed: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
