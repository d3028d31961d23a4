import type { UpstreamHealth } from '../../contract/gateway'
import { redactUrlCredentials } from '../../lib/logger'
import type { ServiceDirectory } from '../../cluster/serviceDirectory'
import type { Upstream, UpstreamName } from './upstreams'
import { callUpstream, readText } from './wire'

/** How long one probe may take before the upstream counts as down. */
const PROBE_TIMEOUT_MS = 3000

/**
 * What each upstream is asked: the llm, asr and tts list their models (vLLM and the speech services
 * answer it); the embeddings server and vector store are asked for their model and collection lists.
 * Any answer below 500 means reachable and answering.
 */
const PROBE_PATH: Record<UpstreamName, string> = {
  llm: '/v1/models',
  asr: '/v1/models',
  tts: '/v1/models',
  embeddings: '/v1/models',
  vector: '/collections',
}

export interface HealthProbeDeps {
  readonly services: ServiceDirectory
  readonly need: (name: UpstreamName) => Upstream
}

/** Probes every upstream at once; the llm's first listed model comes back beside them. */
export async function probeUpstreams(
  d: HealthProbeDeps,
  signal: AbortSignal,
): Promise<{ upstreams: UpstreamHealth[]; llm_model: string | null }> {
  let llmModel: string | null = null
  const upstreams = await Promise.all(
    d.services.all().map(async (s): Promise<UpstreamHealth> => {
      if (s.baseUrl === null)
        return { name: s.name, url: null, state: 'not_configured', latency_ms: null, detail: s.hint }
      const t0 = performance.now()
      const timeout = AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)])
      try {
        const res = await callUpstream(d.need(s.name), { method: 'GET', path: PROBE_PATH[s.name], signal: timeout })
        const latency = Math.round((performance.now() - t0) * 10) / 10
        const status = res.status
        const body = await readText(res)
        if (s.name === 'llm' && status === 200) llmModel = firstModelId(body)
        return {
          name: s.name,
          url: redactUrlCredentials(s.baseUrl),
          state: status >= 500 ? 'error' : 'up',
          latency_ms: latency,
          detail: `HTTP ${status}`,
        }
      } catch (err) {
        const reason =
          timeout.aborted && !signal.aborted ? `no answer in ${PROBE_TIMEOUT_MS / 1000} s` : (err as Error).message
        return { name: s.name, url: redactUrlCredentials(s.baseUrl), state: 'down', latency_ms: null, detail: reason }
      }
    }),
  )
  return { upstreams, llm_model: llmModel }
}

function firstModelId(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { data?: { id?: unknown }[] }
    const id = parsed.data?.[0]?.id
    return typeof id === 'string' ? id : null
  } catch {
    return null
  }
}
