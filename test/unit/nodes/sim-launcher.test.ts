import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shq } from '../../../src-main/ssh/quote'
import { startFullSim, type FullSim } from '../../sim/full'

/**
 * The simulated launcher generations and docker as the real ones behave (test/fixtures/launcher/README.md):
 * what an early-2026 or mid-2026 checkout does with the same command, and the docker shim's images,
 * throwaway runs and container-side paths.
 */
const served = async (sim: FullSim): Promise<string[] | 'refused'> => {
  try {
    const body = (await (await fetch(`${sim.llm.url}/v1/models`)).json()) as { data: { id: string }[] }
    return body.data.map((d) => d.id)
  } catch {
    return 'refused'
  }
}
/** Lets the fakes follow the container events the command caused. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 50))
const launcher = (args: string): string => `cd ~/spark-vllm-docker && ./launch-cluster.sh ${args}`
const MARKERS = {
  solo: /^\s*--solo\)/m,
  image: /^\s*-t\) IMAGE_NAME="\$2"; shift ;;$/m,
  name: /^\s*--name\) CONTAINER_NAME="\$2"; shift ;;$/m,
  quoted: /^\s*COMMAND_TO_RUN=\$\(printf "%q " "\$@"\)$/m,
  joined: /^\s*COMMAND_TO_RUN="\$@"$/m,
  dispatched: /Command dispatched in background/,
  applyMod: /^\s*--apply-mod\)/m,
  hfHome: /HF_HOME/,
  ray: /^\s*--ray\)/m,
}

describe('sim launcher generations', () => {
  let sim: FullSim
  const checkout = (): string => path.join(sim.cluster.node1.home, 'spark-vllm-docker')
  const script = (): string => fs.readFileSync(path.join(checkout(), 'launch-cluster.sh'), 'utf8')
  const behind = (): string =>
    sim.cluster.node1
      .runLocal('cd ~/spark-vllm-docker && git fetch -q && git rev-list --count HEAD..origin/main')
      .stdout.trim()

  beforeAll(async () => {
    sim = await startFullSim({ llmModel: 'org/first', launcherBehind: 2, clusterOnlyModels: ['big/model'] })
  })
  afterAll(async () => sim?.close())

  it('node1 starts at the mid generation: its markers, recipes/, two commits behind', () => {
    const s = script()
    for (const m of ['solo', 'image', 'name', 'quoted', 'dispatched', 'applyMod', 'hfHome'] as const)
      expect(s, m).toMatch(MARKERS[m])
    expect(s).not.toMatch(MARKERS.joined)
    expect(s).not.toMatch(MARKERS.ray)
    expect(fs.existsSync(path.join(checkout(), 'recipes'))).toBe(true)
    expect(behind()).toBe('2')
    const head = sim.cluster.node1.runLocal('git -C ~/spark-vllm-docker rev-parse HEAD').stdout.trim()
    expect(head).toBe(sim.cluster.launcherCommits.mid)
  })

  it('mid: --solo -d exec keeps JSON arguments whole, dispatches into the container log and leaves it running', async () => {
    const r = sim.cluster.node1.runLocal(
      launcher(`--solo -t vllm-node --name vllm_node -d exec vllm serve org/second --hf-overrides ${shq('{"a": 1}')}`),
    )
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stdout).toContain('Command dispatched in background (Daemon mode). Container: vllm_node')
    await settle()
    expect(await served(sim)).toEqual(['org/second'])
    const serving = fs.readFileSync(path.join(sim.cluster.node1.state, 'llm-serving'), 'utf8').split('\n')
    expect(serving.slice(0, 5)).toEqual(['vllm', 'serve', 'org/second', '--hf-overrides', '{"a": 1}'])
    expect(sim.cluster.node1.runLocal('docker logs vllm_node').stdout).toMatch(/non-default args: org\/second/)
    expect(sim.cluster.node1.runLocal(`docker inspect -f '{{.State.Running}}' vllm_node`).stdout.trim()).toBe('true')
  })

  it('mid cluster: Ray backend added; a cluster-only model runs out of memory without tp 2 and serves with it', async () => {
    expect(sim.cluster.node1.runLocal(launcher('--name vllm_node stop')).code).toBe(0)
    await settle()
    expect(await served(sim)).toBe('refused')
    const r = sim.cluster.node1.runLocal(launcher('-d exec vllm serve big/model'))
    expect(r.code, r.stdout + r.stderr).toBe(0)
    await settle()
    const serving = fs.readFileSync(path.join(sim.cluster.node1.state, 'llm-serving'), 'utf8').split('\n')
    expect(serving).toContain('--distributed-executor-backend')
    expect(serving).not.toContain('--tensor-parallel-size')
    expect(await served(sim)).toBe('refused')
    expect(sim.cluster.node1.runLocal('docker logs vllm_node').stdout).toMatch(
      /EngineCore failed to start[\s\S]*OutOfMemoryError[\s\S]*Engine core initialization failed/,
    )

    sim.cluster.node1.runLocal(launcher('--name vllm_node stop'))
    const ok = sim.cluster.node1.runLocal(launcher('-d exec vllm serve big/model --tensor-parallel-size 2'))
    expect(ok.code, ok.stdout + ok.stderr).toBe(0)
    await settle()
    const lines = fs.readFileSync(path.join(sim.cluster.node1.state, 'llm-serving'), 'utf8').split('\n')
    expect(lines.slice(lines.indexOf('--tensor-parallel-size'), lines.indexOf('--tensor-parallel-size') + 2)).toEqual([
      '--tensor-parallel-size',
      '2',
    ])
    expect(await served(sim)).toEqual(['big/model'])
  })

  it('mid: --solo with tensor parallelism 2 fails like vLLM on one GPU, nothing serves', async () => {
    sim.cluster.node1.runLocal(launcher('--name vllm_node stop'))
    const r = sim.cluster.node1.runLocal(launcher('--solo -d exec vllm serve org/tp -tp 2'))
    expect(r.code).toBe(0)
    await settle()
    expect(await served(sim)).toBe('refused')
    expect(sim.cluster.node1.runLocal('docker logs vllm_node').stdout).toMatch(
      /World size \(2\) is larger than the number of available GPUs \(1\)/,
    )
  })

  it('setLauncherGeneration(early): early markers, no recipes/, one more commit behind', () => {
    sim.cluster.node1.runLocal(launcher('--name vllm_node stop'))
    sim.cluster.setLauncherGeneration('early')
    const s = script()
    for (const m of ['image', 'name', 'joined', 'applyMod'] as const) expect(s, m).toMatch(MARKERS[m])
    for (const m of ['solo', 'quoted', 'dispatched', 'hfHome', 'ray'] as const) expect(s, m).not.toMatch(MARKERS[m])
    expect(fs.existsSync(path.join(checkout(), 'recipes'))).toBe(false)
    expect(behind()).toBe('3')
  })

  it('early: --solo is taken as the command: bash refuses it and the cluster is stopped', async () => {
    const r = sim.cluster.node1.runLocal(launcher('--solo -t vllm-node --name vllm_node -d exec vllm serve org/x'))
    expect(r.code).not.toBe(0)
    expect(r.stdout).toContain('Executing command on head node: --solo -t vllm-node --name vllm_node -d exec vllm')
    expect(r.stderr).toMatch(/bash: --: invalid option/)
    expect(r.stdout).toMatch(/Stopping cluster\.\.\.[\s\S]*Cluster stopped\./)
    await settle()
    expect(await served(sim)).toBe('refused')
    expect(sim.cluster.node1.runLocal('docker inspect vllm_node').code).toBe(1)
  })

  it('early: exec joins its words unquoted, so a JSON argument reaches vllm split', async () => {
    const r = sim.cluster.node1.runLocal(launcher(`-d exec vllm serve org/x --hf-overrides ${shq('{"a": 1}')}`))
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/argument --hf-overrides: invalid json_arg value: '\{a:'/)
    await settle()
    expect(await served(sim)).toBe('refused')
  })

  it('early: -d exec runs the command, then stops the cluster (container removed, serving cleared)', async () => {
    const r = sim.cluster.node1.runLocal(launcher('-d exec vllm serve org/x'))
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stdout).not.toContain('Command dispatched in background')
    expect(r.stdout).toMatch(/non-default args: org\/x[\s\S]*Cluster stopped\./)
    await settle()
    expect(await served(sim)).toBe('refused')
    expect(sim.cluster.node1.runLocal('docker inspect vllm_node').code).toBe(1)
    expect(fs.existsSync(path.join(sim.cluster.node1.state, 'llm-serving'))).toBe(false)
  })

  it('early: start -d leaves the cluster running', () => {
    const r = sim.cluster.node1.runLocal(launcher('--name vllm_node -d start'))
    expect(r.stdout).toContain('Cluster started in background (Daemon mode).')
    expect(sim.cluster.node1.runLocal(`docker inspect -f '{{.State.Running}}' vllm_node`).stdout.trim()).toBe('true')
    sim.cluster.node1.runLocal(launcher('stop'))
  })

  it('the launcher update (git pull --ff-only, build-and-copy) brings the mid generation and its image', () => {
    const pull = sim.cluster.node1.runLocal('cd ~/spark-vllm-docker && git pull -q --ff-only')
    expect(pull.code, pull.stderr).toBe(0)
    expect(script()).toMatch(MARKERS.solo)
    expect(fs.existsSync(path.join(checkout(), 'recipes'))).toBe(true)
    expect(behind()).toBe('0')
    const b = sim.cluster.node1.runLocal(
      'cd ~/spark-vllm-docker && SIM_BUILD_DELAY=0 ./build-and-copy.sh -t vllm-node-tf5 -c 127.0.0.1 -u spark',
    )
    expect(b.code, b.stdout + b.stderr).toBe(0)
    expect(b.stdout).toContain('Status: Downloaded newer image for eugr/spark-vllm:latest')
    for (const n of sim.cluster.nodes)
      expect(n.runLocal(`docker image inspect -f '{{json .RepoTags}}' vllm-node-tf5`).code, n.name).toBe(0)
  })
})

describe('sim docker: images, throwaway runs, container-side paths', () => {
  let sim: FullSim
  let outside: string
  beforeAll(async () => {
    sim = await startFullSim({ llmModel: 'org/first' })
    // A chat template in the hub cache (mounted into the llm container) and one in a directory that is not.
    const hub = path.join(sim.cluster.node1.home, '.cache/huggingface/hub/models--org--tpl/snapshots/main')
    fs.mkdirSync(hub, { recursive: true })
    fs.writeFileSync(path.join(hub, 'chat.jinja'), '{{ messages }}')
    outside = path.join(sim.cluster.root, 'models', 'local-x')
    fs.mkdirSync(outside, { recursive: true })
    fs.writeFileSync(path.join(outside, 'chat.jinja'), '{{ messages }}')
  })
  afterAll(async () => sim?.close())

  const checkTemplate = (t: string): string =>
    `python3 -c ${shq('import sys; from vllm.entrypoints.openai.cli_args import validate_chat_template as v; v(sys.argv[1]); print("visible")')} ${shq(t)}`

  it('docker run without -d runs the command, passes output and exit code, and --rm removes the container', () => {
    const n = sim.cluster.node1
    const r = n.runLocal(
      `docker run --rm --network none --entrypoint python3 --name throwaway vllm-node -c ${shq('import sys; print("hi"); sys.exit(3)')}`,
    )
    expect(r).toMatchObject({ code: 3, stdout: 'hi\n' })
    expect(n.runLocal('docker inspect throwaway').code).toBe(1)
    const cleared = n.runLocal(
      `docker run --rm --entrypoint '' vllm-node python3 -c ${shq('import vllm; print(vllm.__version__)')}`,
    )
    expect(cleared).toMatchObject({ code: 0, stdout: '0.11.0+sim\n' })
    const kept = n.runLocal('docker run --name kept vllm-node true')
    expect(kept.code).toBe(0)
    expect(n.runLocal(`docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' kept`).stdout).toBe('exited 0\n')
  })

  it('a local-only image that is missing fails like docker: not found locally, pull denied, 125', () => {
    const n = sim.cluster.node1
    const r = n.runLocal(`docker run --rm --entrypoint python3 vllm-node-tf5 -c 'print(1)'`)
    expect(r.code).toBe(125)
    expect(r.stdout).toBe('')
    expect(r.stderr).toBe(
      "Unable to find image 'vllm-node-tf5:latest' locally\n" +
        "docker: Error response from daemon: pull access denied for vllm-node-tf5, repository does not exist or may require 'docker login': denied: requested access to the resource is denied.\n" +
        "See 'docker run --help'.\n",
    )
    const inspect = n.runLocal('docker image inspect vllm-node-tf5')
    expect(inspect).toMatchObject({ code: 1, stdout: '[]\n' })
    expect(inspect.stderr).toBe('Error response from daemon: No such image: vllm-node-tf5:latest\n')
    const present = JSON.parse(n.runLocal('docker image inspect vllm-node').stdout) as {
      Id: string
      RepoTags: string[]
    }[]
    expect(present[0]).toMatchObject({
      Id: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      RepoTags: ['vllm-node:latest'],
    })
    expect(n.runLocal('docker images --format "{{.Repository}}:{{.Tag}}"').stdout).toContain('vllm-node:latest')
    // A namespaced reference is pulled, its progress on stderr.
    const pulled = n.runLocal('docker run --rm eugr/spark-vllm:latest true')
    expect(pulled.code).toBe(0)
    expect(pulled.stderr).toMatch(/Unable to find image 'eugr\/spark-vllm:latest' locally\n[\s\S]*Pull complete/)
  })

  it('paths are judged as the container sees them: its binds and its own files, not the node', () => {
    const n = sim.cluster.node1
    const inHub = '/root/.cache/huggingface/hub/models--org--tpl/snapshots/main/chat.jinja'
    const local = path.join(outside, 'chat.jinja')
    // The running llm container mounts the hub cache, not the local model's directory.
    expect(n.runLocal(`docker exec vllm_node ${checkTemplate(inHub)}`).stdout).toContain('visible')
    const hidden = n.runLocal(`docker exec vllm_node ${checkTemplate(local)}`)
    expect(hidden.code).not.toBe(0)
    expect(hidden.stderr).toContain(
      `The supplied chat template string (${local}) appears path-like, but doesn't exist!`,
    )
    // A throwaway container with the directory mounted at the same path sees it.
    const mounted = n.runLocal(
      `docker run --rm --network none -v ${shq(`${outside}:${outside}:ro`)} --entrypoint python3 vllm-node -c ${shq(
        'import sys; from vllm.entrypoints.openai.cli_args import validate_chat_template as v; v(sys.argv[1]); print("visible")',
      )} ${shq(local)}`,
    )
    expect(mounted.stdout).toContain('visible')
    // …and a file the container wrote itself is there too.
    n.runLocal(`docker exec -i vllm_node sh -c 'mkdir -p /opt/t && cat > /opt/t/own.jinja' <<<'{{ x }}'`)
    expect(n.runLocal(`docker exec vllm_node ${checkTemplate('/opt/t/own.jinja')}`).stdout).toContain('visible')
  })

  it('docker exec -d: what the command writes to /proc/1/fd/1 lands in the container log', () => {
    const n = sim.cluster.node1
    expect(n.runLocal(`docker exec -d vllm_node bash -c 'echo dispatched-line >> /proc/1/fd/1 2>&1'`).code).toBe(0)
    expect(n.runLocal('docker logs --tail 1 vllm_node').stdout).toMatch(/dispatched-line$/m)
  })

  it('the early build-and-copy builds from source under -t, and docker build names the image', () => {
    const n = sim.cluster.node1
    const early = path.join(__dirname, '..', '..', 'sim', 'launcher-early', 'build-and-copy.sh')
    const r = n.runLocal(`SIM_BUILD_DELAY=0 ${shq(early)} -t vllm-node-early`)
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stdout).toContain('Building vLLM from source')
    expect(r.stderr).toContain('naming to docker.io/library/vllm-node-early:latest done')
    expect(n.runLocal('docker image inspect vllm-node-early').code).toBe(0)
  })
})
