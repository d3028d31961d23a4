import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimCluster, type SimCluster } from '../../sim/cluster'
import { downloadCommand } from '../../../src-main/models/downloadCommands'

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/downloads')
const XET = fs.readFileSync(path.join(fixtures, 'hf-xet-progress.raw.txt'), 'utf8')
const RSYNC = fs.readFileSync(path.join(fixtures, 'rsync-progress.raw.txt'), 'utf8')

/** The simulator's hub CLI and rsync print what the real ones printed: recorded, not imagined. */
describe('the simulated download tools replay the recordings', () => {
  let sim: SimCluster
  beforeAll(async () => {
    sim = await startSimCluster()
  })
  afterAll(async () => sim?.close())

  const sizes = (dir: string): number =>
    fs.readdirSync(dir).reduce((s, f) => s + fs.statSync(path.join(dir, f)).size, 0)
  const snapshot = (repo: string): string => {
    const snaps = path.join(sim.node1.hubDir, `models--${repo.replace('/', '--')}`, 'snapshots')
    return path.join(snaps, fs.readdirSync(snaps)[0] as string)
  }

  it('uvx hf download prints the recorded Xet output byte for byte and writes the declared 8.07 GB', () => {
    const r = sim.node1.runLocal('SIM_DOWNLOAD_DELAY=0 uvx hf download org/replayed')
    expect(r.code).toBe(0)
    expect(r.stderr).toBe(XET)
    expect(r.stdout.trim()).toBe(snapshot('org/replayed'))
    expect(sizes(snapshot('org/replayed'))).toBe(8.07e9)
  })

  it('scaled down, the bars keep the recorded format exactly (8.07 MB: every size one SI prefix lower)', () => {
    const r = sim.node1.runLocal('SIM_DOWNLOAD_DELAY=0 SIM_MODEL_BYTES=8070000 uvx hf download org/scaled')
    expect(r.code).toBe(0)
    const lower: Record<string, string> = { k: '', M: 'k', G: 'M', T: 'G' }
    expect(r.stderr).toBe(XET.replace(/(\d)([kMGT])B/g, (_m, d: string, p: string) => `${d}${lower[p]}B`))
    expect(sizes(snapshot('org/scaled'))).toBe(8_070_000)
  })

  it('HF_HOME moves the cache, as the hub CLI does', () => {
    const hf = path.join(path.dirname(sim.node1.home), 'elsewhere')
    const r = sim.node1.runLocal(`SIM_DOWNLOAD_DELAY=0 HF_HOME='${hf}' uvx hf download org/moved`)
    expect(r.code).toBe(0)
    expect(r.stdout.trim().startsWith(path.join(hf, 'hub', 'models--org--moved', 'snapshots'))).toBe(true)
  })

  it('rsync prints the recorded --progress run for the recorded files, byte for byte', () => {
    // The recorded copy: a cache folder with a config and two shards (sparse here), into a new directory.
    const src = path.join(path.dirname(sim.node1.home), 'rs-src')
    const snap = path.join(src, 'models--org--name', 'snapshots', 'abc')
    fs.mkdirSync(snap, { recursive: true })
    fs.writeFileSync(path.join(snap, 'config.json'), '{}\n')
    for (const [name, size] of [
      ['model-00001-of-00002.safetensors', 314_572_800],
      ['model-00002-of-00002.safetensors', 125_829_120],
    ] as const) {
      fs.writeFileSync(path.join(snap, name), '')
      fs.truncateSync(path.join(snap, name), size)
    }
    const dst = path.join(path.dirname(sim.node2.home), 'dst')
    const r = sim.node1.runLocal(
      `SIM_DOWNLOAD_DELAY=0 rsync -av --mkpath --progress -e 'ssh -p ${sim.node2.port}' '${src}/' 'spark@${sim.node2.address}:${dst}'`,
    )
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(RSYNC.replace('created 1 directory for /tmp/rs/dst', `created 1 directory for ${dst}`))
    expect(fs.statSync(path.join(dst, 'models--org--name/snapshots/abc/model-00001-of-00002.safetensors')).size).toBe(
      314_572_800,
    )
  })

  it('rsync reaches node2 only as node2 is reached: its user, its port, paths it can write', () => {
    const src = sim.node1.hubDir
    fs.mkdirSync(src, { recursive: true })
    const to = (dest: string, port = sim.node2.port): ReturnType<typeof sim.node1.runLocal> =>
      sim.node1.runLocal(`rsync -av --mkpath --progress -e 'ssh -p ${port}' '${src}' '${dest}'`)
    const node2 = sim.node2.address
    expect(to(`nobody@${node2}:${sim.node2.hubDir}/`).stderr).toMatch(/Permission denied \(publickey\)/)
    expect(to(`spark@${node2}:${sim.node2.hubDir}/`, 22).stderr).toMatch(/port 22: Connection refused/)
    // node2's SSH port on another node's address is not node2.
    expect(to(`spark@127.0.0.1:${sim.node2.hubDir}/`).stderr).toMatch(/Connection refused/)
    expect(to(`spark@${node2}:/opt/elsewhere/`).code).toBe(11)
    sim.node1.setFlag('peer_unreachable', true)
    expect(to(`spark@${node2}:${sim.node2.hubDir}/`).code).toBe(255)
    sim.node1.setFlag('peer_unreachable', false)
  })
})

/** The command Tandem builds for the launcher's own copy to two peers, run by the sim's launcher script on node1. */
describe('the launcher script copying to node2 and node3 at once', () => {
  let sim: SimCluster
  beforeAll(async () => {
    sim = await startSimCluster({ nodeCount: 3 })
  })
  afterAll(async () => sim?.close())

  it('one -c word names both peers; each gets the model in its hub cache', () => {
    const peers = [sim.node2, sim.node('node3')].map((n) => ({ host: n.opts.lanIp, user: n.user }))
    const r = sim.node1.runLocal(
      `export SIM_DOWNLOAD_DELAY=0\n${downloadCommand('$HOME/spark-vllm-docker', 'org/spread', peers)}`,
    )
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(`Copying model to 2 host(s): ${peers.map((p) => p.host).join(' ')}`)
    for (const n of sim.nodes)
      expect(fs.readdirSync(path.join(n.hubDir, 'models--org--spread', 'snapshots'))).toHaveLength(1)
  })
})
