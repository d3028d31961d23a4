import fs from 'node:fs'
import path from 'node:path'
import { Copy, DockerfileParser, Healthcheck, type Instruction } from 'dockerfile-ast'
import { describe, expect, it } from 'vitest'

const root = path.resolve(__dirname, '../../..')
const dockerfile = DockerfileParser.parse(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'))

interface Stage {
  name: string | null
  image: string | null
  instructions: Instruction[]
}

/** The instructions of each stage, in order (a stage runs from its FROM to the next). */
function stages(): Stage[] {
  const out: Stage[] = []
  for (const ins of dockerfile.getInstructions()) {
    if (ins.getKeyword() === 'FROM') {
      const from = dockerfile.getFROMs().find((f) => f.getRange().start.line === ins.getRange().start.line)
      out.push({ name: from?.getBuildStage() ?? null, image: from?.getImageName() ?? null, instructions: [] })
    } else out.at(-1)?.instructions.push(ins)
  }
  return out
}

const args = (i: Instruction) => i.getArgumentsContent() ?? ''
const of = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword)

describe('Dockerfile', () => {
  const [build, runtime, ...rest] = stages()

  it('builds in one stage with npm ci and ships from a second', () => {
    expect(rest).toHaveLength(0)
    expect(build?.name).toBe('build')
    expect(runtime?.name).toBe('runtime')
    expect(build?.image).toBe(runtime?.image)
    const buildRuns = of(build!, 'RUN').map(args).join('\n')
    expect(buildRuns).toMatch(/\bnpm ci\b/)
    expect(buildRuns).toMatch(/electron-vite build/)
    expect(buildRuns).toMatch(/npm prune --omit=dev/)
    expect(of(build!, 'ENV').map(args).join(' ')).toContain('ELECTRON_SKIP_BINARY_DOWNLOAD=1')
    // The runtime installs nothing from a registry: its modules are the ones built for this Node.
    expect(of(runtime!, 'RUN').map(args).join('\n')).not.toMatch(/npm (ci|install)/)
  })

  it('ships out/, production node_modules and resources/ from the build stage', () => {
    const copies = of(runtime!, 'COPY').map((c) => ({
      from: c instanceof Copy ? (c.getFromFlag()?.getValue() ?? null) : null,
      source: c.getArguments()[0]?.getValue(),
    }))
    for (const dir of ['out', 'node_modules', 'resources'])
      expect(copies).toContainEqual({ from: 'build', source: `/app/${dir}` })
  })

  it('runs node out/main/index.js --headless as a non-root user with DATA_DIR=/data on port 9999', () => {
    const users = of(runtime!, 'USER').map(args)
    expect(users).toHaveLength(1)
    expect(users[0]).not.toMatch(/^(root|0)(:|$)/)
    expect(of(runtime!, 'RUN').map(args).join('\n')).toContain(`useradd --system --gid tandem`)
    const env = of(runtime!, 'ENV').map(args).join(' ')
    expect(env).toMatch(/\bDATA_DIR=\/data\b/)
    expect(of(runtime!, 'VOLUME').map(args)).toEqual(['["/data"]'])
    expect(of(runtime!, 'EXPOSE').map(args)).toEqual(['9999'])
    const entry = of(runtime!, 'ENTRYPOINT').map(args)
    expect(entry).toHaveLength(1)
    expect(JSON.parse(entry[0] as string)).toEqual(['node', 'out/main/index.js', '--headless'])
    expect(of(runtime!, 'CMD')).toHaveLength(0)
  })

  it('has a health check on /api/health and stops on SIGTERM (exec-form entrypoint: node receives it)', () => {
    const checks = dockerfile.getHEALTHCHECKs()
    expect(checks).toHaveLength(1)
    const check = checks[0] as Healthcheck
    expect(check.getFlags().map((f) => f.getName())).toEqual(['interval', 'timeout', 'start-period', 'retries'])
    expect(check.getSubcommand()?.getValue()).toBe('CMD')
    expect(args(check)).toContain('/api/health')
    expect(of(runtime!, 'STOPSIGNAL').map(args)).toEqual(['SIGTERM'])
  })

  it('the build context leaves out what the image does not need', () => {
    const ignored = fs
      .readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
    for (const p of ['node_modules', 'out', '.git', 'test', '.tandem-data']) expect(ignored).toContain(p)
    for (const needed of ['src-main', 'src-renderer', 'src-preload', 'resources', 'overlays', 'bin'])
      expect(ignored).not.toContain(needed)
  })

  it('runs Node 24, the major that engines names and that .ci/run installs and tests on', () => {
    expect(dockerfile.getFROMs().map((f) => f.getImageName() + ':' + f.getImageTag())).toEqual([
      'node:24-bookworm-slim',
      'node:24-bookworm-slim',
    ])
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } }
    expect(pkg.engines.node).toBe('>=24')
    expect(fs.readFileSync(path.join(root, '.ci/run'), 'utf8')).toMatch(/^NODE_VERSION=24\.\d+\.\d+$/m)
  })
})
