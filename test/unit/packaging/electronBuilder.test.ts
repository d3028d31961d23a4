import fs from 'node:fs'
import path from 'node:path'
import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import pkg from '../../../package.json'
import { VERSION } from '../../../src-main/lib/version'
import { manifest } from '../../../startos/manifest'

const root = path.resolve(__dirname, '../../..')
const config = parse(fs.readFileSync(path.join(root, 'electron-builder.yml'), 'utf8')) as {
  appId: string
  productName: string
  files: string[]
  asar: boolean
  asarUnpack: string[]
  npmRebuild: boolean
  artifactName: string
  extraMetadata?: Record<string, unknown>
  linux: { target: string[]; icon: string; maintainer?: string }
  mac: { target: string[]; icon: string }
  win: { target: string[]; icon: string }
}

/** A glob of the `files` list (`**`, `*` and literal paths) as a test. */
function globTest(glob: string): (file: string) => boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*\*\/?/g, '<DEEP>')
    .replace(/\*/g, '[^/]*')
    .replace(/<DEEP>/g, '.*')
  const rx = new RegExp(`^${re}$`)
  return (file) => rx.test(file)
}

function packaged(file: string): boolean {
  let included = false
  for (const g of config.files) {
    if (g.startsWith('!')) {
      if (globTest(g.slice(1))(file)) included = false
    } else if (globTest(g)(file)) included = true
  }
  return included
}

/** Every production dependency (transitively, optional ones included) that compiles native code. */
function nativeProductionModules(): string[] {
  const seen = new Set<string>()
  const native: string[] = []
  const visit = (name: string): void => {
    if (seen.has(name)) return
    seen.add(name)
    const dir = path.join(root, 'node_modules', name)
    if (!fs.existsSync(path.join(dir, 'package.json'))) return
    const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
      optionalDependencies?: Record<string, string>
    }
    const gyp = (d: string, depth: number): boolean =>
      fs.existsSync(path.join(d, 'binding.gyp')) ||
      (depth > 0 &&
        fs
          .readdirSync(d, { withFileTypes: true })
          .some((e) => e.isDirectory() && e.name !== 'node_modules' && gyp(path.join(d, e.name), depth - 1)))
    if (gyp(dir, 3)) native.push(name)
    for (const dep of Object.keys({ ...p.dependencies, ...p.optionalDependencies })) visit(dep)
  }
  for (const dep of Object.keys(pkg.dependencies)) visit(dep)
  return native.sort()
}

describe('electron-builder configuration', () => {
  it("is valid against electron-builder's own schema", () => {
    const schema = JSON.parse(fs.readFileSync(path.join(root, 'node_modules/app-builder-lib/scheme.json'), 'utf8'))
    const ajv = new Ajv({ allErrors: true, strict: false })
    const validate = ajv.compile(schema)
    expect(validate(config), JSON.stringify(validate.errors, null, 2)).toBe(true)
  })

  it('names the app as everything else does and takes its version from package.json', () => {
    expect(config.appId).toMatch(/^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*){2,}$/)
    expect(config.productName).toBe('Tandem')
    expect(config.productName).toBe(manifest.title)
    expect(config.extraMetadata?.version).toBeUndefined()
    expect(config.artifactName).toContain('${version}')
    expect(VERSION.startsWith(`${pkg.version}:`)).toBe(true)
    expect(pkg.devDependencies.electron).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('packages the main entry, the preload, the renderer and the icons', () => {
    for (const file of [
      pkg.main,
      'out/preload/index.js',
      'out/renderer/index.html',
      'out/main/cli.js',
      'resources/icon.png',
      'package.json',
    ])
      expect(packaged(file), file).toBe(true)
    expect(packaged('out/main/index.js.map')).toBe(false)
    expect(packaged('src-main/index.ts')).toBe(false)
    expect(packaged('test/sim/cluster.ts')).toBe(false)
  })

  it('unpacks every native production module from the asar and rebuilds them at package time, not at install', () => {
    expect(config.asar).toBe(true)
    const native = nativeProductionModules()
    expect(native).toEqual(expect.arrayContaining(['better-sqlite3', 'ssh2']))
    for (const name of native) expect(config.asarUnpack, name).toContain(`node_modules/${name}/**`)
    expect(config.npmRebuild).toBe(true)
    const scripts = pkg.scripts as Record<string, string>
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(scripts[hook] ?? '', hook).not.toMatch(/electron-builder|electron-rebuild|install-app-deps/)
    expect((pkg as { allowScripts: Record<string, boolean> }).allowScripts.electron).toBe(false)
  })

  it('builds AppImage and deb for Linux, dmg for macOS and nsis for Windows with the 1024 px icon', () => {
    expect(config.linux.target).toEqual(['AppImage', 'deb'])
    expect(config.linux.maintainer).toBeTruthy()
    expect(config.mac.target).toEqual(['dmg'])
    expect(config.win.target).toEqual(['nsis'])
    for (const icon of [config.linux.icon, config.mac.icon, config.win.icon]) {
      const head = fs.readFileSync(path.join(root, icon)).subarray(0, 24)
      expect(head.subarray(1, 4).toString()).toBe('PNG')
      expect([head.readUInt32BE(16), head.readUInt32BE(20)]).toEqual([1024, 1024])
    }
    for (const script of ['dist:linux', 'dist:mac', 'dist:win'])
      expect((pkg.scripts as Record<string, string>)[script]).toMatch(
        /^npm run build && electron-builder --(linux|mac|win) /,
      )
  })
})
