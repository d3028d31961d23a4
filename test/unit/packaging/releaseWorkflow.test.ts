import fs from 'node:fs'
import path from 'node:path'
import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import pkg from '../../../package.json'

const root = path.resolve(__dirname, '../../..')
const workflow = parse(fs.readFileSync(path.join(root, '.github/workflows/release.yml'), 'utf8')) as {
  on: { push: { tags: string[] } }
  jobs: Record<
    string,
    {
      needs?: string[]
      strategy?: { matrix: { include: Record<string, string>[] } }
      steps: { uses?: string; run?: string; with?: Record<string, unknown> }[]
    }
  >
}
const scripts = pkg.scripts as Record<string, string>

/** The step commands of a job with the matrix values of one include entry filled in. */
function commands(job: string, vars: Record<string, string> = {}): string[] {
  return workflow.jobs[job]!.steps.flatMap((s) =>
    s.run === undefined
      ? []
      : [s.run.replace(/\$\{\{\s*matrix\.([\w-]+)\s*\}\}/g, (_m, k: string) => vars[k] ?? `<${k}>`)],
  )
}

/** Every `npm run <script>` a command names. */
const npmRuns = (cmd: string): string[] => [...cmd.matchAll(/npm run ([\w:.-]+)/g)].map((m) => m[1] as string)

describe('release workflow', () => {
  it('matches the schema of the workflow syntax it uses', () => {
    const schema = JSON.parse(
      fs.readFileSync(path.join(root, 'test/fixtures/schemas/release-workflow.schema.json'), 'utf8'),
    )
    const validate = new Ajv({ allErrors: true }).compile(schema)
    expect(validate(workflow), JSON.stringify(validate.errors, null, 2)).toBe(true)
    // The schema refuses what it does not know (a typo'd key, a step without uses or run).
    expect(validate({ ...workflow, job: {} })).toBe(false)
    expect(validate({ ...workflow, jobs: { x: { 'runs-on': 'ubuntu-latest', steps: [{ name: 'nothing' }] } } })).toBe(
      false,
    )
  })

  it('runs on a version tag', () => {
    expect(workflow.on.push.tags).toEqual(['v*'])
  })

  it('builds installers on ubuntu, macos and windows: npm ci, the tests, electron-builder, upload', () => {
    const include = workflow.jobs.desktop!.strategy!.matrix.include
    expect(include.map((i) => i.os)).toEqual(['ubuntu-latest', 'macos-latest', 'windows-latest'])
    for (const entry of include) {
      const cmds = commands('desktop', entry)
      const ci = cmds.indexOf('npm ci')
      const test = cmds.findIndex((c) => /^npm (test|run test(:\w+)?)$/.test(c))
      const dist = cmds.findIndex((c) => npmRuns(c).some((s) => /electron-builder/.test(scripts[s] ?? '')))
      expect(ci, entry.os).toBeGreaterThanOrEqual(0)
      expect(test, entry.os).toBeGreaterThan(ci)
      expect(dist, entry.os).toBeGreaterThan(test)
      const os = entry.os!.split('-')[0] as string
      const flag = { ubuntu: '--linux', macos: '--mac', windows: '--win' }[os]
      expect(scripts[npmRuns(cmds[dist] as string)[0] as string], entry.os).toContain(`electron-builder ${flag}`)
    }
    expect(include[0]!.test).toBe('test')
    const upload = workflow.jobs.desktop!.steps.find((s) => s.uses?.startsWith('actions/upload-artifact@'))
    expect(upload?.with?.path).toBe('${{ matrix.installers }}')
    expect(include.map((i) => i.installers?.trim())).toEqual([
      'dist/*.AppImage\ndist/*.deb',
      'dist/*.dmg',
      'dist/*.exe',
    ])
  })

  it('every npm script a step names exists in package.json', () => {
    const named = new Set<string>()
    for (const [job, def] of Object.entries(workflow.jobs)) {
      const variants = def.strategy?.matrix.include ?? [{}]
      for (const vars of variants) for (const cmd of commands(job, vars)) for (const s of npmRuns(cmd)) named.add(s)
    }
    expect([...named].sort()).toEqual(
      ['dist:linux', 'dist:mac', 'dist:win', 'startos:bundle', 'test', 'test:portable', 'typecheck:startos'].sort(),
    )
    for (const s of named) expect(Object.keys(scripts), s).toContain(s)
  })

  it('pushes the container image and packs the StartOS package, then publishes after all three', () => {
    const push = workflow.jobs.container!.steps.find((s) => s.uses?.startsWith('docker/build-push-action@'))
    expect(push?.with).toMatchObject({ context: '.', push: true })
    const pack = commands('startos').join('\n')
    expect(pack).toMatch(/npm run startos:bundle/)
    expect(pack).toMatch(/start-cli s9pk pack --arch=x86_64/)
    expect(pack).toMatch(/start-cli s9pk pack --arch=aarch64/)
    expect(workflow.jobs.publish!.needs?.sort()).toEqual(['container', 'desktop', 'startos'])
  })
})
