import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import { LauncherProbe, parseProbe, probeCommand } from '../../../src-main/models/launcherCapabilities'
import type { ExecResult, SshTarget } from '../../../src-main/ssh/pool'

const fixture = (name: string): string =>
  fs.readFileSync(new URL(`../../fixtures/launcher/${name}`, import.meta.url), 'utf8')
const logger = createLogger({ level: 'error', sink: { write: () => undefined } })
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

describe('reading what the launcher checkout can do', () => {
  it('tells the three generations apart from their recorded probes', () => {
    const early = parseProbe(fixture('probe-early-2026.txt'), '$HOME/spark-vllm-docker', 0)
    expect(early).toMatchObject({ found: true, generation: 'early-2026', commit: expect.stringMatching(/^74c02c3/) })
    expect(early.capabilities).not.toContain('solo')
    const mid = parseProbe(fixture('probe-mid-2026.txt'), '$HOME/spark-vllm-docker', 0)
    expect(mid.generation).toBe('mid-2026')
    expect(mid.capabilities).toEqual(expect.arrayContaining(['solo', 'daemon_exec', 'quoted_exec', 'recipes']))
    expect(parseProbe(fixture('probe-late-2026.txt'), 'x', 0).generation).toBe('late-2026')
  })

  it('no checkout: not found, with where it looked and how to fix it', () => {
    const info = parseProbe('@@launcher missing\n', '$HOME/spark-vllm-docker', 5)
    expect(info).toMatchObject({ found: false, capabilities: [], checked_at: 5 })
    expect(info.error).toMatch(/no launcher checkout .* at \$HOME\/spark-vllm-docker on node1/)
  })

  it("the probe's patterns find the argument parser's lines in a real checkout layout", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-probe-'))
    dirs.push(dir)
    // The lines each capability is read from, in the shape the mid-2026 script has them.
    fs.writeFileSync(
      path.join(dir, 'launch-cluster.sh'),
      [
        'DOCKER_ARGS="-v $HF_CACHE_DIR:/root/.cache/huggingface" # HF_HOME',
        'if [[ -n "$VLLM_SPARK_EXTRA_DOCKER_ARGS" ]]; then :; fi',
        '        -t) IMAGE_NAME="$2"; shift ;;',
        '        --name) CONTAINER_NAME="$2"; shift ;;',
        '        --solo) SOLO_MODE="true" ;;',
        '            COMMAND_TO_RUN=$(printf "%q " "$@")',
        '        echo "Command dispatched in background (Daemon mode). Container: $CONTAINER_NAME"',
        '# the --ray flag is not here: "--ray)" only in a comment',
      ].join('\n'),
    )
    fs.mkdirSync(path.join(dir, 'recipes'))
    const r = spawnSync('bash', ['-c', probeCommand(dir)], { encoding: 'utf8' })
    const info = parseProbe(r.stdout, dir, 0)
    expect(info.capabilities).toEqual(
      [
        'daemon_exec',
        'extra_docker_args',
        'hf_home',
        'image_flag',
        'name_flag',
        'quoted_exec',
        'recipes',
        'solo',
      ].sort(),
    )
    expect(info.generation).toBe('mid-2026')
  })
})

describe('the probe is read once per SSH connection', () => {
  const node1: SshTarget = { host: '127.0.0.1', user: 'u', port: 22 }
  function fakePool(stdout: () => string) {
    const pool = {
      connection: 1,
      execs: 0,
      fail: false,
      connectionNumber: () => pool.connection,
      exec: async (): Promise<ExecResult> => {
        pool.execs++
        if (pool.fail) throw new Error('no SSH answer within 6 s')
        return { code: 0, signal: null, stdout: stdout(), stderr: '' } as ExecResult
      },
    }
    return pool
  }

  it('reuses the reading on the same connection, reads again on a new one or after invalidate', async () => {
    const pool = fakePool(() => fixture('probe-mid-2026.txt'))
    const probe = new LauncherProbe({ pool, target: node1, launcherDir: '$HOME/l', clock: new ManualClock(), logger })
    await probe.info()
    await probe.info()
    expect(pool.execs).toBe(1)
    pool.connection = 2
    await probe.info()
    expect(pool.execs).toBe(2)
    probe.invalidate()
    await probe.info()
    expect(pool.execs).toBe(3)
    await probe.info(true)
    expect(pool.execs).toBe(4)
  })

  it('a failed read or a missing checkout is not kept: the next call reads again', async () => {
    let text = '@@launcher missing\n'
    const pool = fakePool(() => text)
    const probe = new LauncherProbe({ pool, target: node1, launcherDir: '$HOME/l', clock: new ManualClock(), logger })
    expect((await probe.info()).found).toBe(false)
    text = fixture('probe-mid-2026.txt')
    expect((await probe.info()).found).toBe(true)
    pool.fail = true
    probe.invalidate()
    expect((await probe.info()).error).toMatch(/could not be read: no SSH answer/)
    pool.fail = false
    expect((await probe.info()).generation).toBe('mid-2026')
  })
})
