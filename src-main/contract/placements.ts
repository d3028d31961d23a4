import { z } from 'zod'
import { method, type ContractTable } from './define'
import { JobRecord } from './system'
import { Layout, SwapPhase, SwapStateEvent } from './models'
import { ModelKey, NodeName } from './schemas'

/**
 * Placements (docs/placements.md): a catalog entry running on a set of nodes — one node is solo,
 * k nodes are tensor parallel k with the head on the first. A node belongs to at most one
 * placement; the gateway routes each request to the placement serving the body's `model`.
 */

/** A placement's id: its nodes joined by `+`, head first (`node1`, `node1+node2`). */
export const PlacementId = z
  .string()
  .max(400)
  .regex(/^node[1-9][0-9]?(\+node[1-9][0-9]?)*$/, 'a placement id such as node1 or node3+node4')
export type PlacementId = z.infer<typeof PlacementId>

/**
 * What a placement is doing: `ready` answers; `loading` is being launched by the running job;
 * `lost` was ready but one of its nodes stopped answering SSH (its requests still go to its engine while
 * that answers, else get 503 with Retry-After);
 * `unknown` was found answering at start without a record of how it was launched.
 */
export const PlacementState = z.enum(['loading', 'ready', 'lost', 'unknown'])

/**
 * What the reconciler is doing about a placement whose engine stopped: `waiting` for its nodes (or
 * memory, or another recovery) with the reason, `recovering` (attempt N of the limit, next at),
 * `failed` past the restart limit with the last error (Retry starts over). `text` says it in words.
 */
export const PlacementRecovery = z.object({
  state: z.enum(['waiting', 'recovering', 'failed']),
  attempt: z.number().int(),
  of: z.number().int(),
  next_at: z.number().nullable(),
  error: z.string().nullable(),
  text: z.string(),
})
export type PlacementRecovery = z.infer<typeof PlacementRecovery>

/** How long a placement is kept: pinned (never unloaded, always recovered) or an idle ttl in minutes. */
export const PlacementKeepView = z.object({ pinned: z.boolean(), ttl_min: z.number().nullable() })

export const Placement = z.object({
  id: PlacementId,
  /** The catalog entry; null when the model found running matches none. */
  key: z.string().nullable(),
  /** The name the engine serves (its /v1/models id), what clients put in `model`. */
  served: z.string(),
  nodes: z.array(NodeName).min(1),
  /** The node the engine answers on (the first of `nodes`). */
  head: NodeName,
  layout: Layout.nullable(),
  state: PlacementState,
  /** Why the placement is lost (which node stopped answering), else null. */
  reason: z.string().nullable(),
  since: z.number().nullable(),
  /**
   * Memory the engine reserves on each of its nodes: what it holds on the head's unified memory when
   * it runs, else gpu-memory-utilization × RAM; null when unknown.
   */
  memory_bytes_per_node: z.number().nullable(),
  /** The reconciler's work on it (null: nothing to do, or recovery is off). */
  recovery: PlacementRecovery.nullable().optional(),
  /** Pinned or its idle ttl, from the operator's intent (null: no intent, e.g. found running). */
  keep: PlacementKeepView.nullable().optional(),
})
export type Placement = z.infer<typeof Placement>

/** Each configured node, what is placed on it, and whether a new placement may take it. */
export const PlacementNode = z.object({
  name: NodeName,
  placement_id: PlacementId.nullable(),
  /** Reachable over SSH at the last probe (null: not probed yet). */
  reachable: z.boolean().nullable(),
  /** The launcher checkout on this node (a placement's head must have one). */
  launcher: z.boolean().nullable(),
  ram_total_bytes: z.number().nullable(),
  /** Memory held on the node by processes that are not a placement (speech services, other work). */
  other_bytes: z.number().nullable(),
})

export const PlacementsView = z.object({
  placements: z.array(Placement),
  nodes: z.array(PlacementNode),
  /** The placement job in progress. */
  changing: z
    .object({
      id: PlacementId,
      key: z.string().nullable(),
      action: z.enum(['place', 'stop']),
      phase: SwapPhase,
      /** Placements it stops (rolled back if the new one fails to load). */
      displaces: z.array(PlacementId),
      eta_s: z.number().nullable(),
      job_id: z.string(),
    })
    .nullable(),
  job: JobRecord.nullable(),
})
export type PlacementsView = z.infer<typeof PlacementsView>

/**
 * The `placements.changed` push event, the one event for what runs where: the whole view after any
 * change (small: one row per node) and `step`, the placement job's phase change that made it (null
 * when nothing but the view changed). `swap.state` carries the same step alone: an alias, still
 * published for one release for outside clients, of the step here; Tandem itself reads only this.
 */
export const PlacementsChangedEvent = PlacementsView.extend({ step: SwapStateEvent.nullable().default(null) })

/** One reading of a placement engine's own load (its /metrics), every ENGINE_METRICS_INTERVAL_S. */
export const EngineLoadReading = z.object({
  at: z.number(),
  /** Requests the engine is running and queueing, whoever sent them (vLLM's num_requests_*). */
  running: z.number().nullable(),
  waiting: z.number().nullable(),
  /** KV-cache blocks in use, 0 to 100. */
  kv_cache_pct: z.number().nullable(),
  /** Generated tokens per second since the reading before (null: none before, or no counter). */
  tokens_per_s: z.number().nullable(),
  /** Median time to first token of the requests that began since the reading before (null: none). */
  ttft_p50_s: z.number().nullable(),
})
export type EngineLoadReading = z.infer<typeof EngineLoadReading>

export const EngineLoad = EngineLoadReading.extend({
  placement: PlacementId,
  node: NodeName,
  model: z.string(),
  /** ok: the last scrape was read; failing: it was not (error says why); waiting: none finished yet. */
  state: z.enum(['ok', 'failing', 'waiting']),
  error: z.string().nullable(),
  /** Prefix-cache hits over queries since the engine started, 0 to 100. */
  prefix_hit_pct: z.number().nullable(),
  /** The last readings, oldest first (about ten minutes). */
  history: z.array(EngineLoadReading),
})
export type EngineLoad = z.infer<typeof EngineLoad>

export const EngineLoadView = z.object({
  /** Seconds between scrapes; 0: engine metrics are off (ENGINE_METRICS_INTERVAL_S). */
  interval_s: z.number(),
  placements: z.array(EngineLoad),
})
export type EngineLoadView = z.infer<typeof EngineLoadView>

export const placementsContract = {
  listPlacements: method({
    summary: 'What runs where: every placement, every node and the placement job in progress',
    http: 'GET /api/placements',
    input: z.object({}),
    output: PlacementsView,
  }),
  startPlacement: method({
    summary:
      'Place a catalog model on nodes (a job: validate, stop what it displaces, launch, load, ready; rollback on failure)',
    http: 'POST /api/placements',
    input: z.object({
      key: ModelKey,
      /** The nodes, head first; one node = solo, k nodes = tensor parallel k. */
      nodes: z
        .array(NodeName)
        .min(1)
        .max(64)
        .refine((n) => new Set(n).size === n.length, 'a node may appear once'),
      /** Stop the placements on these nodes to make room; without it a taken node is refused (409). */
      displace: z.boolean().optional(),
      confirm_no_fit: z.boolean().optional(),
      /** Unload after this many minutes without a request; absent or null: pinned (never unloaded, always recovered). */
      ttl_min: z.number().int().min(1).max(10_080).nullable().optional(),
    }),
    output: z.object({ job_id: z.string(), id: PlacementId }),
  }),
  retryPlacement: method({
    summary: 'Retry recovering a placement that failed past the restart limit (its counters start over)',
    http: 'POST /api/placements/:id/retry',
    input: z.object({ id: PlacementId }),
    output: z.object({ id: PlacementId, recovery: PlacementRecovery.nullable() }),
  }),
  stopPlacement: method({
    summary: 'Stop a placement (a job): its engine stops and its nodes are free',
    http: 'DELETE /api/placements/:id',
    input: z.object({ id: PlacementId }),
    output: z.object({ job_id: z.string() }),
  }),
  listEngineLoad: method({
    summary:
      'Each placement engine’s own load from its /metrics: running and waiting requests, KV cache, tokens/s, TTFT p50, recent history',
    http: 'GET /api/placements/engine-load',
    input: z.object({}),
    output: EngineLoadView,
  }),
} satisfies ContractTable
