import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, type CliIo } from '../../../src-main/cli/program'
import { systemClock } from '../../../src-main/lib/clock'
import { createLogger } from '../../../src-main/lib/logger'
import { SessionStore } from '../../../src-main/app/sessions'
import { VERSION } from '../../../src-main/lib/version'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { demoDoctorCommand, writeDemoEnv } from '../../sim/demoData'
import { startFullSim, type FullSim } from '../../sim/full'

interface Run {
  code: number
  out: string
  err: string
}

async function tandem(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  let out = ''
  let err = ''
  const io: CliIo = { env, out: (t) => (out += t), err: (t) => (err += t) }
  const code = await runCli(args, io)
  return { code, out, err }
}

interface DoctorJson {
  version: string
  ok: boolean
  checks: { subject: string; check: string; status: 'ok' | 'fail' | 'skip'; detail: string; fix: string | null }[]
}

const statusOf = (r: DoctorJson, subject: string, check: string) =>
  r.checks.find((c) => c.subject === subject && c.check === check)?.status

describe('tandem against the simulated cluster', () => {
  let sim: FullSim
  let dataDir: string
  let env: NodeJS.ProcessEnv

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-cli-'))
    // The key `tandem` will use is the one in DATA_DIR/ssh, authorised on both simulated nodes.
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey] })
    env = { ...sim.env(), DATA_DIR: dataDir, PATH: process.env.PATH }
  })
  afterAll(async () => {
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('--version prints "x.y.z (build r)" from the one version source', async () => {
    const r = await tandem(['--version'], env)
    expect(r.code).toBe(0)
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+:\d+$/)
    const [upstream, build] = VERSION.split(':')
    expect(r.out.trim()).toBe(`${upstream} (build ${build})`)
  })

  it('every command has --help', async () => {
    for (const cmd of ['serve', 'admin-token', 'ssh-key', 'doctor']) {
      const r = await tandem([cmd, '--help'], env)
      expect(r.code, cmd).toBe(0)
      expect(r.out, cmd).toContain(`Usage: tandem ${cmd}`)
    }
    const unknown = await tandem(['frobnicate'], env)
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain("unknown command 'frobnicate'")
  })

  it('doctor passes every check on a healthy cluster', async () => {
    const r = await tandem(['doctor'], env)
    expect(r.err).toBe('')
    expect(r.out).toContain('all checks passed')
    expect(r.out).toMatch(/\[ok\] {3}node1 reachable: ssh spark@127\.0\.0\.1:\d+ \(spark-a1\)/)
    expect(r.out).toContain('[ok]   node1 nvidia-smi: NVIDIA GB10, unified memory')
    expect(r.out).toContain('[ok]   node2 docker: docker answers for spark')
    expect(r.out).toContain('[ok]   node1 launcher scripts: launch-cluster.sh, hf-download.sh, build-and-copy.sh')
    expect(r.out).toMatch(
      /\[ok\] {3}llm {3}llm port \d+: http:\/\/127\.0\.0\.1:\d+\/health answers \(model Qwen\/Qwen3-8B\)/,
    )
    expect(r.code).toBe(0)
  })

  it('doctor first says which data directory, settings file and environment it read', async () => {
    const r = await tandem(['doctor'], env)
    const read = r.out.split('\n').filter((l) => l.startsWith('[read] '))
    expect(read[0]).toBe(`[read] data directory: ${path.resolve(dataDir)} (DATA_DIR)`)
    expect(read[1]).toBe(
      `[read] settings file: ${path.join(path.resolve(dataDir), 'settings.json')}: not there (built-in defaults and the environment only)`,
    )
    expect(read[2]).toMatch(/^\[read\] environment: \d+ settings \(.*NODE1_HOST, NODE1_USER, NODE1_SSH_PORT.*\)$/)
    // Names only: no value of any setting is printed.
    expect(read[2]).not.toContain('127.0.0.1')
    const j = JSON.parse((await tandem(['doctor', '--json'], env)).out) as { read: { data_dir: string } }
    expect(j.read.data_dir).toBe(path.resolve(dataDir))
  })

  it('doctor checks the demo through its data directory and demo.env, and says a bare directory has nothing', async () => {
    const demoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-cli-demo-'))
    try {
      // The demo's data directory: its key (the one the nodes trust), a saved setting, and demo.env.
      fs.cpSync(path.join(dataDir, 'ssh'), path.join(demoDir, 'ssh'), { recursive: true })
      fs.writeFileSync(path.join(demoDir, 'settings.json'), JSON.stringify({ MONITOR_INTERVAL_S: 30 }))
      const file = writeDemoEnv(demoDir, sim.env())
      const bare = { PATH: process.env.PATH }
      // The command the demo prints, run as printed (its words after `npx tandem`).
      const args = demoDoctorCommand(demoDir).split(' ').slice(2)
      const r = await tandem(args, bare)
      expect(r.out).toContain(`[read] data directory: ${demoDir} (--data-dir)`)
      expect(r.out).toContain(
        `[read] settings file: ${path.join(demoDir, 'settings.json')}: 1 setting (MONITOR_INTERVAL_S)`,
      )
      const names = Object.keys(sim.env()).length
      expect(r.out).toMatch(
        new RegExp(`\\[read\\] environment: \\d+ settings \\(.*\\); ${names} of them from --env-file ${file}`),
      )
      expect(r.out).toContain('all checks passed')
      expect(r.code).toBe(0)

      // The same directory without demo.env: the doctor shows why nothing is configured.
      const without = await tandem(['doctor', '--data-dir', demoDir], bare)
      expect(without.out).toContain('[read] environment: no settings set')
      expect(without.out).toContain('[FAIL] node1 configured: NODE1_HOST and NODE1_USER are not set')
      expect(without.code).toBe(1)
    } finally {
      fs.rmSync(demoDir, { recursive: true, force: true })
    }
  })

  it('ssh-key prints the public key and a command per configured node', async () => {
    const r = await tandem(['ssh-key'], env)
    expect(r.code).toBe(0)
    const pub = fs.readFileSync(path.join(dataDir, 'ssh', 'id_ed25519.pub'), 'utf8').trim()
    expect(r.out.split('\n')[0]).toBe(pub)
    for (const node of [sim.cluster.node1, sim.cluster.node2])
      expect(r.out).toContain(`ssh -p ${node.port} 'spark@${node.address}' 'umask 077 && mkdir -p ~/.ssh`)
    const json = JSON.parse((await tandem(['ssh-key', '--json'], env)).out) as { nodes: { node: string }[] }
    expect(json.nodes.map((n) => n.node)).toEqual(['node1', 'node2'])
  })

  it('admin-token prints the daemon token; --rotate replaces it and ends every session', async () => {
    const first = await tandem(['admin-token'], env)
    expect(first.code).toBe(0)
    const token = first.out.trim()
    expect(fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()).toBe(token)
    expect((await tandem(['admin-token'], env)).out.trim()).toBe(token)

    const logger = createLogger({ level: 'error', sink: { write: () => undefined } })
    const sessionsFile = path.join(dataDir, 'sessions.json')
    const before = new SessionStore({ file: sessionsFile, adminToken: token, clock: systemClock, logger })
    const cookie = before.issue().value

    const rotated = await tandem(['admin-token', '--rotate'], env)
    expect(rotated.code).toBe(0)
    const fresh = rotated.out.trim()
    expect(fresh).not.toBe(token)
    expect(fresh.length).toBeGreaterThanOrEqual(16)
    expect(fs.statSync(path.join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600)
    const after = new SessionStore({ file: sessionsFile, adminToken: fresh, clock: systemClock, logger })
    expect(after.verify(cookie)).toBe(false)

    const pinned = await tandem(['admin-token', '--rotate'], { ...env, ADMIN_TOKEN: 'a-configured-token-123456' })
    expect(pinned.code).toBe(1)
    expect(pinned.err).toContain('ADMIN_TOKEN is set')
    expect(pinned.err).not.toContain('a-configured-token-123456')
  })

  it('admin-token with a rejected file says why and how to set a new one; --reset writes one', async () => {
    const file = path.join(dataDir, 'admin-token')
    const before = fs.readFileSync(file, 'utf8')
    fs.writeFileSync(file, '')
    try {
      const shown = await tandem(['admin-token'], env)
      expect(shown.code).toBe(1)
      expect(shown.out).toBe('')
      expect(shown.err).toContain(`${file} is empty`)
      expect(shown.err).toContain('tandem admin-token --reset')
      // Refused, not regenerated behind the operator's back.
      expect(fs.readFileSync(file, 'utf8')).toBe('')
      const rotated = await tandem(['admin-token', '--reset'], env)
      expect(rotated.code).toBe(0)
      expect(fs.readFileSync(file, 'utf8').trim()).toBe(rotated.out.trim())
      expect((await tandem(['admin-token'], env)).out.trim()).toBe(rotated.out.trim())
    } finally {
      fs.writeFileSync(file, before, { mode: 0o600 })
    }
  })

  it('doctor with node2 down and a launcher script missing: one line per check, a fix per failure, exit 1', async () => {
    fs.rmSync(path.join(sim.cluster.node1.home, 'spark-vllm-docker', 'hf-download.sh'))
    await sim.cluster.node2.down()
    try {
      const r = await tandem(['doctor'], env)
      expect(r.code).toBe(1)
      const lines = r.out
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('[read] '))
      expect(lines.at(-1)).toMatch(/^\d+ checks? failed$/)
      for (const line of lines.slice(0, -1)) expect(line).toMatch(/^\[(ok|FAIL|skip)\]\s+(node1|node2|llm|asr|tts) /)
      for (const line of lines.filter((l) => l.startsWith('[FAIL]'))) expect(line).toContain(' -> fix: ')
      expect(r.out).toMatch(
        /\[FAIL\] node2 reachable: ssh spark@127\.0\.0\.2:\d+: .* -> fix: check that the node is powered on/,
      )
      expect(r.out).toContain('[skip] node2 docker: not checked: no SSH session')
      expect(r.out).toContain('[ok]   node1 reachable')
      expect(r.out).toContain('[FAIL] node1 launcher scripts: hf-download.sh missing -> fix: restore the checkout')

      const j = await tandem(['doctor', '--json'], env)
      expect(j.code).toBe(1)
      const report = JSON.parse(j.out) as DoctorJson
      expect(report.ok).toBe(false)
      expect(report.version).toBe(VERSION)
      expect(statusOf(report, 'node2', 'reachable')).toBe('fail')
      expect(statusOf(report, 'node2', 'nvidia-smi')).toBe('skip')
      expect(statusOf(report, 'node1', 'launcher scripts')).toBe('fail')
      expect(statusOf(report, 'node1', 'docker')).toBe('ok')
      expect(report.checks.filter((c) => c.status === 'fail').every((c) => c.fix !== null)).toBe(true)
    } finally {
      await sim.cluster.node2.up()
    }
  })
})
