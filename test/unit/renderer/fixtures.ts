/** Rows the renderer tests' fake daemons answer with, shared where views read the same API. */

const GB = 1e9

/** A reachable node's hardware row (GET /api/hardware) with no GPU or disk figures. */
export const hardwareRow = (node: string, probedAt: number) => ({
  node,
  status: 'ok',
  host: '10.0.0.11',
  hostname: node,
  uptime_s: 1,
  load: [0, 0, 0],
  cores: 20,
  ram: { total_bytes: 128 * GB, used_bytes: 10 * GB, available_bytes: 118 * GB },
  disk: null,
  gpu: null,
  gpu_unified_memory: true,
  interface: null,
  mac: null,
  probed_at: probedAt,
  probe_ms: 1,
})

/** A placement (swap) job's record as GET /api/placements, GET /api/swap and `job.update` carry it, running. */
export const swapJobRecord = (startedAt: number, over: Record<string, unknown> = {}) => ({
  id: 'swap-9',
  kind: 'swap' as const,
  title: 'Place coder on node2',
  state: 'running' as const,
  phase: 'Loading',
  started_at: startedAt,
  finished_at: null,
  elapsed_s: 1,
  progress: null,
  log: [],
  result: null,
  error: null,
  ...over,
})

/**
 * A `placements.changed` push event carrying a placement job's step (how the daemon tells a step), with
 * `view` the placements view it leaves (none placed and no nodes when absent).
 */
export const stepEvent = (seq: number, at: number, step: Record<string, unknown>, view: object = noPlacements) => ({
  seq,
  at,
  name: 'placements.changed' as const,
  data: { ...view, step },
})

const noPlacements = { placements: [], nodes: [], changing: null, job: null }

/** A product's monthly USD tier as GET /v1/admin/products/:id/policies lists it (prod-1's p-1). */
export const monthlyTier = (over: Record<string, unknown> = {}) => ({
  id: 'p-1',
  product_id: 'prod-1',
  slug: 'monthly',
  name: 'Monthly',
  description: '',
  tier_rank: 1,
  price_currency_override: null,
  price_value_override: null,
  price_currency: 'USD',
  price_value: 900,
  entitlements: [],
  max_machines: 1,
  duration_days: 0,
  grace_period_days: 7,
  is_trial: false,
  trial_days: 0,
  is_recurring: true,
  renewal_period_days: 30,
  highlighted: false,
  public: true,
  active: true,
  ...over,
})
