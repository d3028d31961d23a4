import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { startFakeAsr, startFakeLlm, startFakeTts, type FakeAsr, type FakeLlm, type FakeTts } from '../../sim/http'
import { startFakeEmbeddings } from '../../fakes/embeddings'
import { startFakeQdrant, type FakeQdrant } from '../../fakes/qdrant'
import type { LoopbackServer } from '../../fakes/loopback'
import type { Clock } from '../../../src-main/lib/clock'

/** A daemon whose llm, asr, tts, embeddings and vector store are loopback fakes. */
export interface GatewayRig {
  daemon: TestDaemon
  llm: FakeLlm
  asr: FakeAsr
  tts: FakeTts
  embeddings: LoopbackServer
  qdrant: FakeQdrant
  stop(): Promise<void>
}

export async function startRig(
  env: Record<string, string> = {},
  opts: { clock?: Clock; llmDown?: boolean; dataDir?: string } = {},
): Promise<GatewayRig> {
  const [llm, asr, tts, embeddings, qdrant] = await Promise.all([
    startFakeLlm(),
    startFakeAsr(),
    startFakeTts(),
    startFakeEmbeddings(),
    startFakeQdrant(),
  ])
  // The engine still loading when Tandem starts (a power cut: the engine takes minutes).
  if (opts.llmDown === true) await llm.setFault('refused')
  const daemon = await startDaemon({
    env: {
      NODE1_HOST: '127.0.0.1',
      NODE1_USER: 'sim',
      NODE2_HOST: '127.0.0.1',
      NODE2_USER: 'sim',
      LLM_PORT: String(llm.port),
      ASR_PORT: String(asr.port),
      TTS_PORT: String(tts.port),
      EMBEDDINGS_URL: embeddings.url,
      VECTOR_URL: qdrant.url,
      SCRUB_TERMS: 'Project Nightjar,ACME-7',
      ...env,
    },
    clock: opts.clock,
    dataDir: opts.dataDir,
  })
  return {
    daemon,
    llm,
    asr,
    tts,
    embeddings,
    qdrant,
    async stop() {
      await daemon.stop()
      await Promise.all([llm.close(), asr.close(), tts.close(), embeddings.stop(), qdrant.stop()])
    },
  }
}

/** A WAV header followed by `seconds` of 16 kHz 16-bit mono silence. */
export function silenceWav(seconds: number): Buffer {
  const rate = 16000
  const n = Math.round(seconds * rate) * 2
  const b = Buffer.alloc(44 + n)
  b.write('RIFF', 0, 'ascii')
  b.writeUInt32LE(36 + n, 4)
  b.write('WAVEfmt ', 8, 'ascii')
  b.writeUInt32LE(16, 16)
  b.writeUInt16LE(1, 20)
  b.writeUInt16LE(1, 22)
  b.writeUInt32LE(rate, 24)
  b.writeUInt32LE(rate * 2, 28)
  b.writeUInt16LE(2, 32)
  b.writeUInt16LE(16, 34)
  b.write('data', 36, 'ascii')
  b.writeUInt32LE(n, 40)
  return b
}

/** Polls `cond` until it holds (bounded); for effects that land a moment after a response. */
export async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
