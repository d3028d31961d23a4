import fs from 'node:fs'
import path from 'node:path'
import { startSimCluster, type ContainerEvent, type SimCluster, type SimClusterOptions } from './cluster'
import { startFakeAsr, startFakeLlm, startFakeTts, type FakeAsr, type FakeLlm, type FakeTts } from './http'
import { SERVE_FAILURES } from './http/llm'

/**
 * The whole simulated cluster: two SSH nodes plus the llm, asr and tts HTTP fakes, wired so the
 * fakes follow their containers (a stopped container refuses connections; `launch-cluster.sh exec
 * vllm serve <model>` changes the llm's model).
 */
export interface FullSim {
  cluster: SimCluster
  llm: FakeLlm
  asr: FakeAsr
  tts: FakeTts
  /** Environment for a Tandem daemon pointed at all of it. */
  env(): Record<string, string>
  close(): Promise<void>
}

export const SIM_CONTAINERS = { llm: 'vllm_node', asr: 'asr', tts: 'tts' } as const

export async function startFullSim(
  opts: Omit<SimClusterOptions, 'containers' | 'onContainerEvent'> & { llmModel?: string; llmRunning?: boolean } = {},
): Promise<FullSim> {
  const llm = await startFakeLlm({ model: opts.llmModel ?? 'Qwen/Qwen3-8B' })
  const asr = await startFakeAsr()
  const tts = await startFakeTts()
  const byContainer: Record<string, { node: string; fake: FakeLlm | FakeAsr | FakeTts }> = {
    [SIM_CONTAINERS.llm]: { node: 'node1', fake: llm },
    [SIM_CONTAINERS.asr]: { node: 'node2', fake: asr },
    [SIM_CONTAINERS.tts]: { node: 'node2', fake: tts },
  }
  const pending: Promise<void>[] = []
  // The fakes follow container events in order: a serve and the stop right after it (the early
  // launcher's exec) must not race each other's listen/close.
  let chain: Promise<void> = Promise.resolve()
  const then = (step: () => Promise<void> | void): void => {
    chain = chain.then(step, step)
    pending.push(chain)
  }
  let node1State: string | null = null
  // The llm answers only while `vllm serve` runs: a container the launcher started runs `sleep
  // infinity` until it dispatches the serve command (a `serve` event), which makes the engine load.
  const llmCommand = (): string[] => {
    if (node1State === null) return ['vllm', 'serve', opts.llmModel ?? 'Qwen/Qwen3-8B']
    const file = path.join(node1State, 'docker', 'containers', `${SIM_CONTAINERS.llm}.json`)
    try {
      return (JSON.parse(fs.readFileSync(file, 'utf8')) as { Config: { Cmd: string[] } }).Config.Cmd
    } catch {
      return []
    }
  }
  const follow = (e: ContainerEvent): void => {
    const bound = byContainer[e.name]
    if (!bound || bound.node !== e.node) return
    if (bound.fake === llm && e.state === 'running') {
      const cmd = llmCommand()
      if (cmd[0] !== 'vllm' || cmd[1] !== 'serve') return
      then(() => {
        if (node1State !== null && cmd[2]) llm.setModel(cmd[2])
        return llm.setFault('none')
      })
    } else if (e.state === 'running') {
      then(() => bound.fake.setFault('none'))
      // A (re)started asr container is a fresh process: its wedge is gone.
      if (bound.fake === asr) asr.containerStarted()
    } else if (e.state === 'exited' || e.state === 'removed') {
      then(() => {
        if (bound.fake === llm && node1State !== null) llm.unload()
        return bound.fake.setFault('refused')
      })
    } else if (e.state === 'serve' && e.model && bound.fake === llm) {
      const model = e.model
      const failure = e.failure === undefined ? undefined : (SERVE_FAILURES[e.failure] ?? e.failure)
      // The load runs on its own (it may be held or slow); only its start is ordered.
      then(() => {
        pending.push(llm.load(model, failure))
      })
    }
  }
  const cluster = await startSimCluster({
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
  node1State = cluster.node1.state
  // The engine writes its log where `docker logs` reads the llm container's.
  llm.setEngineLog((line) =>
    fs.appendFileSync(
      path.join(cluster.node1.state, 'docker', 'logs', `${SIM_CONTAINERS.llm}.log`),
      `${new Date().toISOString()} ${line}\n`,
    ),
  )
  return {
    cluster,
    llm,
    asr,
    tts,
    env: () => ({
      ...cluster.daemonEnv(),
      LLM_PORT: String(llm.port),
      ASR_PORT: String(asr.port),
      TTS_PORT: String(tts.port),
      LLM_CONTAINER: SIM_CONTAINERS.llm,
      ASR_CONTAINER: SIM_CONTAINERS.asr,
      TTS_CONTAINER: SIM_CONTAINERS.tts,
    }),
    close: async () => {
      await cluster.close()
      await Promise.all([llm.close(), asr.close(), tts.close()])
    },
  }
}
