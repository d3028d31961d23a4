import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/**
 * The house's size caps (issue 40, item 3) over the whole main process: no file over 500 lines,
 * no class over 400. Measured from the parsed source, so a class is counted from `class` to its brace.
 */
const ROOT = path.resolve(__dirname, '../../..')
const FOLDERS = ['src-main']

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return sources(p)
    return e.name.endsWith('.ts') ? [p] : []
  })
}

function classes(file: string): { name: string; lines: number }[] {
  const text = fs.readFileSync(file, 'utf8')
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: { name: string; lines: number }[] = []
  const visit = (n: ts.Node): void => {
    if (ts.isClassDeclaration(n) || ts.isClassExpression(n)) {
      const start = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line
      const end = sf.getLineAndCharacterOfPosition(n.getEnd()).line
      out.push({ name: n.name?.text ?? '(anonymous)', lines: end - start + 1 })
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}

describe('size caps in the main process', () => {
  const files = FOLDERS.flatMap((f) => sources(path.join(ROOT, f)))

  it('reads the folders it checks', () => {
    expect(files.some((f) => f.endsWith(path.join('licensing', 'licenses.ts')))).toBe(true)
    expect(files.some((f) => f.endsWith(path.join('services', 'deepHealth.ts')))).toBe(true)
    expect(files.some((f) => f.endsWith(path.join('models', 'placements.ts')))).toBe(true)
    expect(files.some((f) => f.endsWith(path.join('config', 'settingSpecs.ts')))).toBe(true)
    expect(files.some((f) => f.endsWith(path.join('relay', 'proxy.ts')))).toBe(true)
  })

  it('has no file over 500 lines', () => {
    const long = files
      .map((f) => ({ file: path.relative(ROOT, f), lines: fs.readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 500)
    expect(long).toEqual([])
  })

  it('has no class over 400 lines', () => {
    const big = files.flatMap((f) =>
      classes(f)
        .filter((c) => c.lines > 400)
        .map((c) => `${path.relative(ROOT, f)} ${c.name} ${c.lines}`),
    )
    expect(big).toEqual([])
  })
})
