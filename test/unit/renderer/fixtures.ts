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
