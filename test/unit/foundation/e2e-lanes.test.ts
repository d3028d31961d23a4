import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { OWN_DEMO_SPECS } from '../../../playwright.config'

/**
 * The browser suite runs in two lanes (playwright.config.ts): a spec that starts its own demo runs
 * beside the specs sharing the one demo. A spec in the wrong lane would race the shared demo.
 */
describe('the browser suite’s two lanes', () => {
  it('lists exactly the specs that start a demo of their own', () => {
    const dir = path.join(__dirname, '../../e2e')
    const own = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.spec.ts') && /\buseOwnDemo\(/.test(fs.readFileSync(path.join(dir, f), 'utf8')))
      .map((f) => `**/${f}`)
      .sort()
    expect(own.length).toBeGreaterThan(0)
    expect([...OWN_DEMO_SPECS].sort()).toEqual(own)
  })
})
