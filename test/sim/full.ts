import fs from 'node:fs'
import path from 'node:path'
import {
  simNodeAddresses,
  startSimCluster,
  type ContainerEvent,
  type SimCluster,
  type SimClusterOptions,
  type SimNodeName,
} from './cluster'
import { startFakeAsr, startFakeLlm, startFakeTts, type FakeAsr, type FakeLlm, type FakeTts } from './http'
import { SERVE_FAILURES } from './http/llm'

/**
 * The whole simulated cluster: the SSH nodes plus the HTTP fakes of what their containers serve —
 * an llm engine per node on that node's address and the same port (node1's serving at start, the
 * others' answering once a launcher on them serves a model), asr and tts on node2 — wired so the
 * fakes follow their containers (a stopped container refuses connections; `launch-cluster.sh exec
 * vllm serve <model>` on a node changes that node's engine's model).
 */
export interface FullSim {
  cluster: SimCluster
  /** node1's engine (the llm service). */
  llm: FakeLlm
  asr: FakeAsr
  tts: FakeTts
  /** The engine a node serves on its own address at the llm port (node1's is `llm`). */
  engine(node: SimNodeName): FakeLlm
  /** Environment for a Tandem daemon pointed at all of it. */
  env(): Record<string, string>
  close(): Promise<void>
}

export const SIM_CONTAINERS = { llm: 'vllm_node', asr: 'asr', tts: 'tts' } as const

export type FullSimOptions = Omit<SimClusterOptions, 'containers' | 'onContainerEvent'> & {
  llmModel?: string
  llmRunning?: boolean
}

/** One engine per node, all on the port node1's got; only node1's serves at start. */
async function startEngines(opts: FullSimOptions): Promise<Map<SimNodeName, FakeLlm>> {
  const [first, ...rest] = simNodeAddresses(opts)
  const node1 = await startFakeLlm({ model: opts.llmModel ?? 'Qwen/Qwen3-8B', host: first?.address })
  const engines = new Map<SimNodeName, FakeLlm>([['node1', node1]])
  for (const n of rest) {
    const e = await startFakeLlm({ model: null, host: n.address, port: node1.port })
    await e.setFault('refused')
    engines.set(n.name, e)
  }
  return engines
}

export async function startFullSim(opts: FullSimOptions = {}): Promise<FullSim> {
  const engines = await startEngines(opts)
  const llm = engines.get('node1') as FakeLlm
  const node2Address = simNodeAddresses(opts)[1]?.address
  const asr = await startFakeAsr({ host: node2Address })
  const tts = await startFakeTts({ host: node2Address })
  const fakeOf = (e: ContainerEvent): FakeLlm | FakeAsr | FakeTts | undefined => {
    if (e.name === SIM_CONTAINERS.llm) return engines.get(e.node)
    if (e.node !== 'node2') return undefined
    return e.name === SIM_CONTAINERS.asr ? asr : e.name === SIM_CONTAINERS.tts ? tts : undefined
  }
  const pending: Promise<void>[] = []
  // The fakes follow container events in order: a serve and the stop right after it (the early
  // launcher's exec) must not race each other's listen/close.
  let chain: Promise<void> = Promise.resolve()
  const then = (step: () => Promise<void> | void): void => {
    chain = chain.then(step, step)
    pending.push(chain)
  }
  let cluster: SimCluster | null = null
  // An engine answers only while `vllm serve` runs: a container the launcher started runs `sleep
  // infinity` until it dispatches the serve command (a `serve` event), which makes the engine load.
  const llmCommand = (node: SimNodeName): string[] => {
    if (cluster === null) return node === 'node1' ? ['vllm', 'serve', opts.llmModel ?? 'Qwen/Qwen3-8B'] : []
    const file = path.join(cluster.node(node).state, 'docker', 'containers', `${SIM_CONTAINERS.llm}.json`)
    try {
      return (JSON.parse(fs.readFileSync(file, 'utf8')) as { Config: { Cmd: string[] } }).Config.Cmd
    } catch {
      return []
    }
  }
  const followEngine = (engine: FakeLlm, e: ContainerEvent): void => {
    if (e.state === 'running') {
      const cmd = llmCommand(e.node)
      if (cmd[0] !== 'vllm' || cmd[1] !== 'serve') return
      then(() => {
        if (cluster !== null && cmd[2]) engine.setModel(cmd[2])
        return engine.setFault('none')
      })
    } else if (e.state === 'exited' || e.state === 'removed') {
      then(() => {
        if (cluster !== null) engine.unload()
        return engine.setFault('refused')
      })
    } else if (e.state === 'serve' && e.model) {
      const model = e.model
      const failure = e.failure === undefined ? undefined : (SERVE_FAILURES[e.failure] ?? e.failure)
      // The load runs on its own (it may be held or slow); only its start is ordered.
      then(() => {
        pending.push(engine.load(model, failure))
      })
    }
  }
  const follow = (e: ContainerEvent): void => {
    const fake = fakeOf(e)
    if (fake === undefined) return
    if (e.name === SIM_CONTAINERS.llm) return followEngine(fake as FakeLlm, e)
    if (e.state === 'running') {
      then(() => fake.setFault('none'))
      // A (re)started asr container is a fresh process: its wedge is gone.
      if (fake === asr) asr.containerStarted()
    } else if (e.state === 'exited' || e.state === 'removed') then(() => fake.setFault('refused'))
  }
  const started = await startSimCluster({
    ...opts,
    llmPort: llm.port,
    onContainerEvent: follow,
    containers: {
      node1: [
        {
          name: SIM_CONTAINERS.llm,
          image: 'vllm-node',
          // As the launcher started it: the hub cache mounted where vLLM looks for it.
          volumes: ['$HF_CACHE:/root/.cache/huggingface'],
          command: ['vllm', 'serve', opts.llmModel ?? 'Qwen/Qwen3-8B', '--port', String(llm.port)],
          running: opts.llmRunning ?? true,
        },
      ],
      node2: [
        { name: SIM_CONTAINERS.asr, image: 'nvcr.io/nim/nvidia/parakeet-tdt-0.6b-v2:1.0.0', ports: [[asr.port, 9000]] },
        { name: SIM_CONTAINERS.tts, image: 'ghcr.io/sim/magpie-tts:latest', ports: [[tts.port, 9000]] },
      ],
    },
  })
  await Promise.all(pending)
  cluster = started
  // Each engine writes its log where `docker logs` reads its node's llm container's.
  for (const [name, engine] of engines)
    engine.setEngineLog((line) =>
      fs.appendFileSync(
        path.join(started.node(name).state, 'docker', 'logs', `${SIM_CONTAINERS.llm}.log`),
        `${new Date().toISOString()} ${line}\n`,
      ),
    )
  return {
    cluster: started,
    llm,
    asr,
    tts,
    engine: (node) => {
      const e = engines.get(node)
      if (!e) throw new Error(`the sim has no ${node}`)
      return e
    },
    env: () => ({
      ...started.daemonEnv(),
      LLM_PORT: String(llm.port),
      ASR_PORT: String(asr.port),
      TTS_PORT: String(tts.port),
      LLM_CONTAINER: SIM_CONTAINERS.llm,
      ASR_CONTAINER: SIM_CONTAINERS.asr,
      TTS_CONTAINER: SIM_CONTAINERS.tts,
    }),
    close: async () => {
      await started.close()
      await Promise.all([...[...engines.values()].map((e) => e.close()), asr.close(), tts.close()])
    },
  }
}
