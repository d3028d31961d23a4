import type { OpenAiModel, OpenAiModelList } from '../../contract/relays'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { PlacementRoute } from '../../models/types'
import { voiceLanguage } from '../audio/speech'
import type { Upstream, UpstreamName } from './upstreams'
import { upstreamJson } from './wire'

export interface ModelId {
  id: string
  created?: number
}

/** A model the llm routes serve now and the placement serving it (null: the llm service, no placements). */
export interface ServedModel {
  id: string
  placement: string | null
}

const LIST_TTL_MS = 60_000
const LIST_TIMEOUT_MS = 5_000

/**
 * What the upstreams serve: the llm's models (the placed ones as the router knows them now, else
 * the llm service's, always asked: a swap changes it), the asr's models and the tts voices (cached
 * for a minute; failures are not cached).
 */
export class ModelLists {
  readonly asrModels: () => Promise<ModelId[]>
  readonly ttsVoices: () => Promise<{ id: string; language: string }[]>

  constructor(
    private readonly need: (name: UpstreamName) => Upstream,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Every ready placement (the router's `placed`): /v1/models lists their served models. */
    private readonly placed?: () => readonly PlacementRoute[],
  ) {
    this.asrModels = this.cached(() => this.listFrom('asr'))
    this.ttsVoices = this.cached(async () => {
      const { value } = await upstreamJson<{ voices?: unknown }>(this.need('tts'), {
        method: 'GET',
        path: '/v1/voices',
        signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
      })
      const list = Array.isArray(value.voices) ? (value.voices as unknown[]) : []
      return list
        .map((v) => (typeof v === 'string' ? v : (v as { id?: unknown })?.id))
        .filter((id): id is string => typeof id === 'string')
        .map((id) => ({ id, language: voiceLanguage(id) ?? '' }))
    })
  }

  llmModels(): Promise<ModelId[]> {
    return this.listFrom('llm')
  }

  /** The asr's model name for a transcript's `models`, or null when the asr does not say. */
  async asrModelName(): Promise<string | null> {
    try {
      return (await this.asrModels())[0]?.id ?? null
    } catch {
      return null
    }
  }

  /**
   * GET /v1/models: every placement's model (or the llm's), asr model and tts voice, each id once; a
   * service that is down is left out.
   */
  async openAiList(): Promise<OpenAiModelList> {
    const [llm, asr, voices] = await Promise.allSettled([this.placedModels(), this.asrModels(), this.ttsVoices()])
    const data: OpenAiModel[] = []
    const seen = new Set<string>()
    const add = (r: PromiseSettledResult<ModelId[]>, owner: string): void => {
      if (r.status === 'rejected')
        return this.logger.debug(`/v1/models: ${owner} list unavailable`, { error: r.reason })
      for (const m of r.value) {
        if (seen.has(m.id)) continue
        seen.add(m.id)
        data.push({ id: m.id, object: 'model', created: m.created ?? 0, owned_by: owner })
      }
    }
    add(llm, 'llm')
    add(asr, 'asr')
    add(voices, 'tts')
    return { object: 'list', data }
  }

  /**
   * The models the llm routes serve, as /v1/models lists them: the placed ones as the engines last
   * listed them (no call out), each with its placement, else what the llm service lists.
   */
  async servedModels(): Promise<ServedModel[]> {
    if (this.placed === undefined) return (await this.llmModels()).map((m) => ({ id: m.id, placement: null }))
    // Every id each engine lists (aliases, LoRA adapters, the catalog key it was launched with).
    return this.placed().flatMap((r) => (r.names ?? [r.served]).map((id) => ({ id, placement: r.id })))
  }

  private async placedModels(): Promise<ModelId[]> {
    if (this.placed === undefined) return this.llmModels()
    return (await this.servedModels()).map((m) => ({ id: m.id }))
  }

  private async listFrom(name: 'llm' | 'asr'): Promise<ModelId[]> {
    const { value } = await upstreamJson(this.need(name), {
      method: 'GET',
      path: '/v1/models',
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    })
    const data = (value as { data?: unknown })?.data
    if (!Array.isArray(data)) return []
    return data.filter((m): m is ModelId => typeof (m as { id?: unknown })?.id === 'string')
  }

  private cached<T>(load: () => Promise<T>): () => Promise<T> {
    let value: { at: number; v: T } | null = null
    return async () => {
      if (value && this.clock.now() - value.at < LIST_TTL_MS) return value.v
      const v = await load()
      value = { at: this.clock.now(), v }
      return v
    }
  }
}
