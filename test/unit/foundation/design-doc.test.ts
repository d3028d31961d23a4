import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * docs/design.md and its notes stay true to the code (issue 40, item 6): every note linked, every
 * source file they name exists, and every folder of src-main is placed in the layout.
 */
const ROOT = path.resolve(__dirname, '../../..')
const DESIGN = fs.readFileSync(path.join(ROOT, 'docs/design.md'), 'utf8')
const NOTES = fs.readdirSync(path.join(ROOT, 'docs/design')).filter((f) => f.endsWith('.md'))

/** The source files a text names in backticks, as written (`src-main/x/y.ts`, or `x/y.ts` under src-main). */
function namedSources(text: string): string[] {
  return [...text.matchAll(/`([\w.-]+(?:\/[\w.-]+)+\.(?:ts|mts|vue))`/g)].map((m) => m[1]!)
}

/** Written from the repository, src-main, src-renderer or test, or (in a domain's note) from that domain's folder. */
const exists = (named: string, domain: string | null): boolean =>
  ['', 'src-main', 'src-renderer', 'test', ...(domain ? [`src-main/${domain}`] : [])].some((base) =>
    fs.existsSync(path.join(ROOT, base, named)),
  )

describe('the design docs', () => {
  it('link every design note', () => {
    expect(NOTES.length).toBeGreaterThan(4)
    for (const note of NOTES) expect(DESIGN, note).toContain(`](design/${note})`)
  })

  it('name only source files that exist', () => {
    const texts: [string, string | null][] = [
      [DESIGN, null],
      ...NOTES.map((n): [string, string] => [
        fs.readFileSync(path.join(ROOT, 'docs/design', n), 'utf8'),
        n.slice(0, -3),
      ]),
    ]
    const named = texts.flatMap(([text, domain]) => namedSources(text).map((n) => ({ n, domain })))
    expect(named.map((x) => x.n)).toContain('src-main/compose.ts')
    expect(named.filter((x) => !exists(x.n, x.domain)).map((x) => x.n)).toEqual([])
  })

  it('place every folder of src-main in the layout', () => {
    const layout = DESIGN.slice(DESIGN.indexOf('## Layout'), DESIGN.indexOf('## The contract'))
    const folders = fs
      .readdirSync(path.join(ROOT, 'src-main'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
    expect(folders).toContain('services')
    expect(folders.filter((f) => !layout.includes(`${f}/`))).toEqual([])
  })
})
