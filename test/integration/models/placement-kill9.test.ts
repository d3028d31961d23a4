import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { startFullSim, type FullSim } from '../../sim/full'
import { builtDaemonEnv, waitForListening } from '../../helpers/builtDaemon'

/**
 * Issue 47 with a real kill -9: the built headless daemon (out/main/index.js, which `npm test`
 * builds first) over the three-node sim places a model on node3 and is killed with SIGKILL while
 * the engine loads. The next daemon on the same DATA_DIR reports the job's outcome, lists the
 * placement from its intent, and adopts the engine when it answers, launching nothing.
 */
const root = path.resolve(__dirname, '../../..')
const bundle = path.join(root, 'out/main/index.js')
const TOKEN = 'kill9-admin-token-0123456789abcdef'
const children: ChildProcess[] = []

async function until<T>(what: string, look: () => Promise<T | null>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await look().catch(() => null)
    if (v !== null) return v
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`never happened: ${what}`)
}

describe('a kill -9 of the headless daemon while a placement loads', () => {
  let sim: FullSim
  let dataDir: string

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-kill9-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({
      authorizedKeys: [key.publicKey],
      nodeCount: 3,
      launcherNodes: ['node1', 'node2', 'node3'],
      llmModel: 'sim/first',
    })
  })
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL')
    await sim?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const daemon = async () => {
    const env = await builtDaemonEnv(dataDir, TOKEN, sim.env())
    const child = spawn(process.execPath, [bundle, '--headless'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    const url = await waitForListening(child)
    const api = async (p: string, init: RequestInit = {}) => {
      const res = await fetch(`${url}${p}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    return { child, api }
  }

  it('reports the job after the restart, lists the placement and adopts its engine without launching again', async () => {
    expect(fs.existsSync(bundle)).toBe(true)
    const first = await daemon()
    expect(
      (
        await first.api('/api/models', {
          method: 'POST',
          body: JSON.stringify({ key: 'third', name: 'Third', repo: 'sim/third' }),
        })
      ).status,
    ).toBe(200)
    await first.api('/api/hardware?fresh=true')
    sim.engine('node3').holdLoads(true)
    const placed = await first.api('/api/placements', {
      method: 'POST',
      body: JSON.stringify({ key: 'third', nodes: ['node3'] }),
    })
    expect(placed.status, JSON.stringify(placed.body)).toBe(200)
    const jobId = placed.body.job_id as string
    await until('the job loading', async () => {
      const v = await first.api('/api/placements')
      return (v.body.changing as { phase?: string } | null)?.phase === 'loading' ? true : null
    })
    const dead = new Promise((r) => first.child.once('exit', r))
    first.child.kill('SIGKILL')
    await dead

    const launchesBefore = sim.cluster.node('node3').commands.filter((c) => c.includes('launch-cluster.sh')).length
    const second = await daemon()
    const job = await second.api(`/api/jobs/${jobId}`)
    expect(job.status).toBe(200)
    expect(job.body).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('Tandem restarted while this job was loading'),
    })
    // Listed at once from its intent (its engine does not answer yet), then adopted once it does.
    const listed = await second.api('/api/placements')
    expect((listed.body.placements as { id: string; served: string }[]).map((p) => [p.id, p.served])).toContainEqual([
      'node3',
      'sim/third',
    ])
    sim.engine('node3').releaseLoads()
    await until('node3 serving sim/third', async () => {
      const v = await second.api('/api/placements')
      const p = (v.body.placements as { id: string; state: string }[]).find((x) => x.id === 'node3')
      return p?.state === 'ready' ? true : null
    })
    expect(sim.cluster.node('node3').commands.filter((c) => c.includes('launch-cluster.sh')).length).toBe(
      launchesBefore,
    )
    second.child.kill('SIGTERM')
  })
})
