import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shq } from '../../../src-main/ssh/quote'
import { startFullSim, type FullSim } from '../../sim/full'

/** The simulated cluster itself: the shims and launcher behave as the code under test expects. */
describe('sim cluster', () => {
  let sim: FullSim
  beforeAll(async () => {
    sim = await startFullSim({ llmModel: 'org/first' })
  })
  afterAll(async () => sim?.close())

  it('docker keeps container state across commands and reports unknown names like docker', () => {
    const n = sim.cluster.node2
    expect(n.runLocal(`docker inspect -f '{{.State.Status}} {{.RestartCount}}' asr`).stdout).toBe('running 0\n')
    expect(n.runLocal('docker restart asr').code).toBe(0)
    expect(n.runLocal(`docker inspect -f '{{.State.Status}} {{.RestartCount}}' asr`).stdout).toBe('running 1\n')
    const missing = n.runLocal('docker inspect nope')
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/No such object: nope/)
    const ps = n.runLocal(`docker ps --format '{{.Names}}\\t{{.State}}'`).stdout.trim().split('\n').sort()
    expect(ps).toEqual(['asr\trunning', 'tts\trunning'])
    expect(JSON.parse(n.runLocal('docker inspect tts').stdout)[0].Name).toBe('/tts')
    const dup = n.runLocal('docker run -d --name tts some/image')
    expect(dup.code).toBe(125)
    expect(dup.stderr).toMatch(/already in use/)
  })

  it('a stopped container takes its HTTP fake down with it', async () => {
    sim.cluster.node2.runLocal('docker stop tts')
    await new Promise((r) => setTimeout(r, 50))
    await expect(fetch(`${sim.tts.url}/health`)).rejects.toThrow()
    sim.cluster.node2.runLocal('docker start tts')
    await new Promise((r) => setTimeout(r, 50))
    expect((await fetch(`${sim.tts.url}/health`)).status).toBe(200)
  })

  it('the launcher checkout is a real git repo two commits behind its origin', () => {
    const r = sim.cluster.node1.runLocal(
      'cd "$HOME/spark-vllm-docker" && git fetch -q && git rev-list --left-right --count HEAD...origin/main',
    )
    expect(r.stdout.trim()).toBe('0\t2')
    sim.cluster.pushUpstreamCommit('one more')
    expect(
      sim.cluster.node1
        .runLocal('cd ~/spark-vllm-docker && git fetch -q && git rev-list --count HEAD..origin/main')
        .stdout.trim(),
    ).toBe('3')
  })

  it('launch-cluster.sh exec vllm serve switches the llm model', async () => {
    const r = sim.cluster.node1.runLocal(
      `cd ~/spark-vllm-docker && ./launch-cluster.sh --solo -d exec vllm serve ${shq('org/second')} --port 8888`,
    )
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/Command dispatched in background/)
    const models = (await (await fetch(`${sim.llm.url}/v1/models`)).json()) as { data: { id: string }[] }
    expect(models.data[0]?.id).toBe('org/second')
  })

  it('hf-download.sh downloads into the hub cache and copies to the peer with -c', () => {
    const r = sim.cluster.node1.runLocal(
      'SIM_DOWNLOAD_DELAY=0 ~/spark-vllm-docker/hf-download.sh org/tiny-model -c 192.168.177.12',
    )
    expect(r.code).toBe(0)
    expect(r.stderr).toMatch(/Fetching 4 files: 100%/)
    expect(r.stdout).toMatch(/sending incremental file list/)
    for (const home of [sim.cluster.node1.home, sim.cluster.node2.home]) {
      const dir = path.join(home, '.cache/huggingface/hub/models--org--tiny-model/snapshots')
      expect(fs.readdirSync(dir)).toHaveLength(1)
    }
    const bad = sim.cluster.node1.runLocal('~/spark-vllm-docker/hf-download.sh "a;b/c"')
    expect(bad.code).toBe(1)
  })
})
