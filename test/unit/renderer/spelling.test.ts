import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * Issue 31 #10: one spelling, American "license", everywhere a person reads: the dashboard, the
 * buyer pages, server messages, the demo, metrics and dashboards, the README and docs. (The
 * fixtures under test/fixtures are copies of upstream text and keep theirs.)
 */
const ROOT = path.resolve(__dirname, '../../..')
const BRITISH = new RegExp(['licen', 'ce'].join(''), 'i')
const PLACES = ['src-renderer', 'src-main', 'src-shared', 'resources', 'test/sim', 'docs', 'README.md']
const TEXT = /\.(ts|mts|vue|md|json|html|css)$/

function files(rel: string): string[] {
  const abs = path.join(ROOT, rel)
  if (!fs.existsSync(abs)) return []
  if (fs.statSync(abs).isFile()) return [rel]
  return fs
    .readdirSync(abs, { withFileTypes: true })
    .flatMap((d) =>
      d.isDirectory() ? files(path.join(rel, d.name)) : TEXT.test(d.name) ? [path.join(rel, d.name)] : [],
    )
}

describe('spelling', () => {
  it('says "license", never the British spelling, in what a person reads', () => {
    const hits: string[] = []
    for (const place of PLACES)
      for (const file of files(place)) {
        const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')
        lines.forEach((line, i) => {
          if (BRITISH.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`)
        })
      }
    expect(hits).toEqual([])
  })
})
