import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { ensureServiceKey } from '../../../src-main/ssh/keys'
import { readSse, startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFullSim, type FullSim } from '../../sim/full'
import { SIM_REASONING } from '../../sim/http/llm'

interface Chunk {
  type: string
  text?: string
  model?: string
  commits?: number
}

/** Launcher updates through the real daemon, over real HTTP and SSH, against the sim's checkout. */
describe('launcher updates routes', () => {
  let sim: FullSim
  let daemon: TestDaemon
  let dataDir: string
  const clock = new ManualClock(Date.now())
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> })
  const checkout = (): string => path.join(sim.cluster.node1.home, 'spark-vllm-docker')
  const hold = (): string => path.join(sim.cluster.node1.state, 'build_hold')
  const explain = async (): Promise<{ status: number; chunks: Chunk[]; errors: string[] }> => {
    const res = await daemon.admin('/api/explain-updates', { method: 'POST', body: '{}' })
    if (res.status !== 200) return { status: res.status, chunks: [], errors: [JSON.stringify(await res.json())] }
    const events = await readSse(res)
    return {
      status: res.status,
      chunks: events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data) as Chunk),
      errors: events.filter((e) => e.event === 'error').map((e) => e.data),
    }
  }
  const joined = (chunks: Chunk[], type: string): string =>
    chunks
      .filter((c) => c.type === type)
      .map((c) => c.text)
      .join('')
  const waitForPhase = async (id: string, phase: string): Promise<void> => {
    for (;;) {
      const job = (await json(await daemon.admin(`/api/jobs/${id}`))).body
      if (job.phase === phase || job.state !== 'running') return
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-updates-http-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    sim = await startFullSim({ authorizedKeys: [key.publicKey], launcherBehind: 3 })
    daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, clock, dataDir })
    // The swap manager learns what the llm serves at start.
    expect((await json(await daemon.admin('/api/swap'))).body.loaded).toMatchObject({ served: 'Qwen/Qwen3-8B' })
  })
  afterAll(async () => {
    await daemon?.stop()
    await sim?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('GET /api/updates: behind 3 with the pending commits, clean, on main, and what ran', async () => {
    const { status, body } = await json(await daemon.admin('/api/updates'))
    expect(status).toBe(200)
    expect(body).toMatchObject({ ok: true, ahead: 0, behind: 3, dirty: false, current: false, branch: 'main' })
    expect(body.pending.map((c: { subject: string }) => c.subject)).toEqual([
      'hf-download: copy to peers in parallel',
      'Bump vLLM ref to include the GB10 attention fix',
      'Add --apply-mod support for model-specific patches',
    ])
    expect(body.pending[0]).toMatchObject({
      author: 'Launcher Maintainer',
      sha: expect.stringMatching(/^[0-9a-f]{40}$/),
    })
    expect(body.pending[0].date).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(body.log.join('\n')).toContain('git rev-list --left-right --count HEAD...origin/main → ahead 0, behind 3')
  })

  it('a commit with separators and quotes in its subject is listed intact', async () => {
    sim.cluster.pushUpstreamCommit(`Quote 'it' | "x" -> $(y) ; done`)
    const { body } = await json(await daemon.admin('/api/updates'))
    expect(body.behind).toBe(4)
    expect(body.pending[0].subject).toBe(`Quote 'it' | "x" -> $(y) ; done`)
  })

  it('a dirty checkout: the status names the files, apply is refused with 409 naming them, nothing ran', async () => {
    sim.cluster.setLauncherDirty(['README.md', 'recipes/local-tweak.yaml'])
    try {
      const st = (await json(await daemon.admin('/api/updates'))).body
      expect(st).toMatchObject({ dirty: true })
      expect([...st.dirty_files].sort()).toEqual(['README.md', 'recipes/local-tweak.yaml'])
      const before = sim.cluster.node1.commands.length
      const res = await json(await daemon.admin('/api/updates/apply', { method: 'POST', body: '{}' }))
      expect(res.status).toBe(409)
      expect(JSON.stringify(res.body)).toContain('README.md')
      expect(JSON.stringify(res.body)).toContain('recipes/local-tweak.yaml')
      const ran = sim.cluster.node1.commands.slice(before).join('\n')
      expect(ran).not.toContain('git pull')
      expect(ran).not.toContain('build-and-copy.sh')
    } finally {
      sim.cluster.setLauncherDirty(null)
    }
  })

  it('explain splits reasoning_content from the answer, with the commit subjects in the prompt', async () => {
    sim.llm.setReasoning('field')
    const { status, chunks, errors } = await explain()
    expect(status).toBe(200)
    expect(errors).toEqual([])
    expect(joined(chunks, 'reasoning')).toBe(SIM_REASONING.join(''))
    const answer = joined(chunks, 'answer')
    expect(answer.startsWith('The quick brown fox')).toBe(true)
    expect(answer).not.toContain(SIM_REASONING.join(''))
    const prompt = JSON.stringify(sim.llm.lastRequest)
    expect(prompt).toContain('Bump vLLM ref to include the GB10 attention fix')
    expect(prompt).toContain('CHANGELOG.md')
    expect(chunks[chunks.length - 1]).toEqual({ type: 'done', model: 'Qwen/Qwen3-8B', commits: 4 })
  })

  it('explain splits <think> spans even when the tags are cut across chunks', async () => {
    sim.llm.setReasoning('think')
    const { chunks, errors } = await explain()
    expect(errors).toEqual([])
    expect(joined(chunks, 'reasoning')).toBe(SIM_REASONING.join(''))
    const answer = joined(chunks, 'answer')
    expect(answer).not.toMatch(/<\/?th|ink>/)
    expect(answer.startsWith('The quick brown fox')).toBe(true)
    sim.llm.setReasoning('off')
  })

  it('explain with no model loaded on the llm: a clear error naming it', async () => {
    sim.llm.setModel(null)
    try {
      const { errors, chunks } = await explain()
      expect(chunks.filter((c) => c.type === 'answer')).toEqual([])
      expect(errors.join('\n')).toContain('no model is loaded on the llm')
      expect(errors.join('\n')).toContain('"code":"conflict"')
    } finally {
      sim.llm.setModel('Qwen/Qwen3-8B')
    }
  })

  it('apply: Pulling, Building, Copying to node2 with -c and -u, the log streamed, a second update 409', async () => {
    fs.writeFileSync(hold(), '')
    const start = await json(await daemon.admin('/api/updates/apply', { method: 'POST', body: '{}' }))
    expect(start.status).toBe(200)
    const id = start.body.job_id as string
    await waitForPhase(id, 'Building the llm container')
    const second = await json(await daemon.admin('/api/updates/apply', { method: 'POST', body: '{}' }))
    expect(second.status).toBe(409)
    expect(JSON.stringify(second.body)).toContain(id)
    fs.rmSync(hold())

    const events = (await readSse(await daemon.admin(`/api/jobs/${id}/stream`)))
      .map((e) => JSON.parse(e.data || '{}') as { type?: string; phase?: string; state?: string; line?: string })
      .filter((e) => e.type !== undefined)
    expect(events.filter((e) => e.type === 'phase').map((e) => e.phase)).toEqual([
      'Pulling',
      'Building the llm container',
      'Copying to peer nodes',
    ])
    const log = events.filter((e) => e.type === 'log').map((e) => e.line)
    expect(log).toContain('$ ./build-and-copy.sh -c 127.0.0.2 -u spark')
    expect(log).toContain('Status: Downloaded newer image for eugr/spark-vllm:latest')
    expect(log).toContain('Loading image into spark@127.0.0.2...')
    expect(events[events.length - 1]).toMatchObject({ type: 'end', state: 'succeeded' })
    const job = (await json(await daemon.admin(`/api/jobs/${id}`))).body
    expect(job).toMatchObject({ kind: 'update', state: 'succeeded' })
    expect(job.progress.percent).toBe(100)
    expect(sim.cluster.node1.commands.join('\n')).toContain(`'-c' '127.0.0.2' '-u' 'spark'`)

    const after = (await json(await daemon.admin('/api/updates'))).body
    expect(after).toMatchObject({ ok: true, behind: 0, current: true, pending: [] })
    expect(fs.readFileSync(path.join(checkout(), 'CHANGELOG.md'), 'utf8')).toContain('GB10 attention fix')
  })

  it('cancel stops the build on the node', async () => {
    fs.writeFileSync(hold(), '')
    const id = (await json(await daemon.admin('/api/updates/apply', { method: 'POST', body: '{}' }))).body
      .job_id as string
    await waitForPhase(id, 'Building the llm container')
    // The wrapper announces the script's process group before the script waits on the hold.
    let group: string | undefined
    while (group === undefined) {
      const job = (await json(await daemon.admin(`/api/jobs/${id}`))).body
      group = (job.log as string[]).map((l) => /as process group (\d+)$/.exec(l)?.[1]).find((g) => g !== undefined)
      if (group === undefined) await new Promise((r) => setTimeout(r, 20))
    }
    // Live processes of the group on node1 (zombies awaiting their reaper do not count).
    const live = (): string =>
      sim.cluster.node1.runLocal(`ps -eo pgid=,stat=,args= | awk '$1 == ${group} && $2 !~ /^Z/'`).stdout.trim()
    expect(live()).toContain('build-and-copy.sh')
    expect((await daemon.admin(`/api/jobs/${id}/cancel`, { method: 'POST', body: '{}' })).status).toBe(200)
    const events = (await readSse(await daemon.admin(`/api/jobs/${id}/stream`)))
      .map((e) => JSON.parse(e.data || '{}') as { type?: string; state?: string })
      .filter((e) => e.type !== undefined)
    expect(events[events.length - 1]).toMatchObject({ type: 'end', state: 'cancelled' })
    expect(sim.cluster.node1.commands.join('\n')).toContain(`kill -TERM -- '-${group}'`)
    expect(live()).toBe('')
    fs.rmSync(hold(), { force: true })
  })
})

describe('explain-updates with no model on the llm', () => {
  it('answers 409 before any stream opens, saying no model is loaded', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-updates-nomodel-'))
    const key = ensureServiceKey(path.join(dataDir, 'ssh'))
    const sim = await startFullSim({ authorizedKeys: [key.publicKey], llmRunning: false })
    const daemon = await startDaemon({ env: { ...sim.env(), MONITOR_INTERVAL_S: '0' }, dataDir })
    try {
      expect(((await (await daemon.admin('/api/swap')).json()) as { loaded: unknown }).loaded).toBeNull()
      const res = await daemon.admin('/api/explain-updates', { method: 'POST', body: '{}' })
      expect(res.status).toBe(409)
      expect(res.headers.get('content-type')).toContain('application/json')
      expect(JSON.stringify(await res.json())).toContain('no model is loaded on the llm')
      expect(sim.llm.lastRequest).toBeNull()
    } finally {
      await daemon.stop()
      await sim.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
