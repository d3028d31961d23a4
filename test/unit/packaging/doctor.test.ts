import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { doctorExitCode, formatDoctorLine, probeScript, runDoctor } from '../../../src-main/cli/doctor'
import { loadConfig } from '../../../src-main/config/load'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'
import { SshError, type ExecResult, type SshPool, type SshTarget } from '../../../src-main/ssh/pool'

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-doctor-'))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

// Nothing listens on port 9 of loopback: the service checks fail fast without leaving the machine.
const env = {
  DATA_DIR: dataDir,
  NODE1_HOST: '127.0.0.1',
  NODE1_USER: 'spark',
  NODE2_HOST: '127.0.0.2',
  NODE2_USER: 'ops',
  LLM_PORT: '9',
  ASR_PORT: '9',
  TTS_PORT: '9',
}
const config = loadConfig({ env })

/** A pool whose node answers come from a table: stdout text, or an error to throw. */
function fakePool(answers: Record<string, string | Error>): SshPool {
  return {
    exec: async (t: SshTarget): Promise<ExecResult> => {
      const a = answers[t.host]
      if (a === undefined) throw new Error(`unexpected host ${t.host}`)
      if (a instanceof Error) throw a
      return { code: 0, signal: null, stdout: a, stderr: '' }
    },
  } as unknown as SshPool
}

const healthyNode2 = '@@hostname\nb2\n@@docker\ndocker-ok\n@@gpu\nNVIDIA GB10, [N/A]\nexit=0\n'

describe('tandem doctor findings', () => {
  it('a user outside the docker group, a dedicated-memory GPU and an absent checkout each get their line', async () => {
    const node1 =
      '@@hostname\na1\n@@docker\ndocker-denied\npermission denied while trying to connect to the docker API at unix:///var/run/docker.sock\n' +
      '@@gpu\nNVIDIA RTX 6000, 49140\nexit=0\n@@launcher\ndir-missing\n'
    const checks = await runDoctor({
      config,
      pool: fakePool({ '127.0.0.1': node1, '127.0.0.2': healthyNode2 }),
      services: new ServiceDirectory(config),
    })
    const line = (subject: string, check: string) =>
      formatDoctorLine(checks.find((c) => c.subject === subject && c.check === check)!)
    expect(line('node1', 'docker')).toContain('spark may not use docker: permission denied')
    expect(line('node1', 'docker')).toContain('-> fix: on node1: sudo usermod -aG docker spark')
    expect(line('node1', 'nvidia-smi')).toBe(
      '[ok]   node1 nvidia-smi: NVIDIA RTX 6000, 49140 MiB dedicated memory (not unified)',
    )
    expect(line('node1', 'launcher')).toContain(
      '[FAIL] node1 launcher: no launcher checkout at $HOME/spark-vllm-docker',
    )
    expect(line('node1', 'launcher scripts')).toBe('[skip] node1 launcher scripts: not checked: no checkout')
    expect(line('node2', 'nvidia-smi')).toBe('[ok]   node2 nvidia-smi: NVIDIA GB10, unified memory')
    expect(line('llm', 'llm port 9')).toMatch(
      /^\[FAIL\] llm {3}llm port 9: http:\/\/127\.0\.0\.1:9\/health: .* -> fix: load a model/,
    )
    expect(doctorExitCode(checks)).toBe(1)
  })

  it('a refused key, a changed host key and a broken driver say what to do', async () => {
    const gpuBroken =
      '@@hostname\nb2\n@@docker\ndocker-ok\n@@gpu\nNVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\nexit=9\n'
    const auth = new SshError('auth', 'spark@127.0.0.1:22: the node refused the key')
    let checks = await runDoctor({
      config,
      pool: fakePool({ '127.0.0.1': auth, '127.0.0.2': gpuBroken }),
      services: new ServiceDirectory(config),
    })
    const find = (subject: string, check: string) => checks.find((c) => c.subject === subject && c.check === check)
    expect(find('node1', 'reachable')?.status).toBe('ok')
    expect(find('node1', 'ssh key')?.fix).toContain('tandem ssh-key')
    expect(find('node1', 'docker')?.status).toBe('skip')
    expect(find('node2', 'nvidia-smi')?.status).toBe('fail')
    expect(find('node2', 'nvidia-smi')?.detail).toContain('NVIDIA-SMI has failed')

    const changed = new SshError('host_key_changed', 'host key changed', false, 'SHA256:newkey')
    checks = await runDoctor({
      config,
      pool: fakePool({ '127.0.0.1': changed, '127.0.0.2': healthyNode2 }),
      services: new ServiceDirectory(config),
    })
    expect(find('node1', 'host key')?.status).toBe('fail')
    expect(find('node1', 'host key')?.fix).toContain('SHA256:newkey')
    expect(find('node1', 'ssh key')?.status).toBe('skip')
  })

  it('an unconfigured node is one failing line naming the settings', async () => {
    const bare = loadConfig({ env: { DATA_DIR: dataDir, LLM_PORT: '9' } })
    const checks = await runDoctor({ config: bare, pool: fakePool({}), services: new ServiceDirectory(bare) })
    expect(checks.filter((c) => c.subject === 'node2').map(formatDoctorLine)).toEqual([
      '[FAIL] node2 configured: NODE2_HOST and NODE2_USER are not set -> fix: set NODE2_HOST and NODE2_USER (settings file, environment or the StartOS configuration action)',
    ])
  })

  it('checks every node NODES lists, and names the entry to fix for a skipped one', async () => {
    const more = loadConfig({ env: { ...env, NODES: 'ops@127.0.0.3,bad entry,ops@127.0.0.5:2222' } })
    const down = new SshError('unreachable', 'ops@127.0.0.5:2222: connect ECONNREFUSED')
    const checks = await runDoctor({
      config: more,
      pool: fakePool({
        '127.0.0.1': healthyNode2,
        '127.0.0.2': healthyNode2,
        '127.0.0.3': healthyNode2,
        '127.0.0.5': down,
      }),
      services: new ServiceDirectory(more),
    })
    const find = (subject: string, check: string) => checks.find((c) => c.subject === subject && c.check === check)
    expect(find('node3', 'reachable')?.status).toBe('ok')
    expect(find('node3', 'nvidia-smi')?.status).toBe('ok')
    expect(find('node3', 'launcher')).toBeUndefined()
    expect(find('node4', 'configured')?.status).toBe('fail')
    expect(find('node4', 'configured')?.fix).toContain('NODES')
    expect(find('node5', 'reachable')?.status).toBe('fail')
    expect(find('node5', 'reachable')?.fix).toContain('its entry in NODES')
    expect(find('node5', 'docker')?.status).toBe('skip')
  })

  it('the probe quotes the launcher directory and refuses an unsafe one', () => {
    expect(probeScript('/opt/launcher')).toContain("cd '/opt/launcher'")
    expect(() => probeScript('/opt/$(reboot)')).toThrow(/unsafe path segment/)
    expect(probeScript('$HOME/spark-vllm-docker')).toContain('cd "$HOME/spark-vllm-docker"')
    expect(probeScript(null)).not.toContain('@@launcher')
  })
})
