import { z } from 'zod'
import { method, type ContractTable } from './define'
import { Placement } from './placements'
import { MacAddress, NodeName, Port, SshHost } from './schemas'

/** The nodes methods: hardware, connectivity, Wake-on-LAN, status and discovery, SSH identity. */

export const GpuProcess = z.object({ pid: z.number(), name: z.string(), used_bytes: z.number() })

export const GpuReading = z.object({
  name: z.string(),
  utilization_pct: z.number().nullable(),
  temperature_c: z.number().nullable(),
  power_w: z.number().nullable(),
  /** Sum of per-process compute memory (on unified memory), or the driver's used figure. */
  memory_used_bytes: z.number().nullable(),
  /** The driver's total, or system RAM when the GPU shares it (unified memory). */
  memory_total_bytes: z.number().nullable(),
  memory_fraction: z.number().nullable(),
  processes: z.array(GpuProcess),
})

/** vLLM titles its engine and worker processes `VLLM::EngineCore`, `VLLM::Worker_TP0`, … (what nvidia-smi lists). */
export const ENGINE_PROCESS_PREFIX = 'VLLM::'

/**
 * Unified memory (GB10: CPU and GPU share one pool) split once: what the engines hold, what every
 * other process holds (the OS, speech services, other work), and what is free. The three add up to
 * the total: free is what `free -b` reports available, engine the engines' per-process GPU memory.
 */
export const MemoryPool = z.object({
  total_bytes: z.number(),
  engine_bytes: z.number(),
  other_bytes: z.number(),
  free_bytes: z.number(),
})
export type MemoryPool = z.infer<typeof MemoryPool>

export const HardwareOk = z.object({
  node: z.string(),
  status: z.literal('ok'),
  host: z.string(),
  hostname: z.string(),
  uptime_s: z.number().nullable(),
  load: z.array(z.number()),
  cores: z.number().nullable(),
  ram: z.object({ total_bytes: z.number(), used_bytes: z.number(), available_bytes: z.number() }).nullable(),
  disk: z
    .object({ mount: z.string(), total_bytes: z.number(), used_bytes: z.number(), available_bytes: z.number() })
    .nullable(),
  gpu: GpuReading.nullable(),
  gpu_unified_memory: z.boolean(),
  /** The one pool of a unified-memory node (null when RAM and GPU memory are separate, or RAM is unread). */
  memory_pool: MemoryPool.nullable().default(null),
  interface: z.string().nullable(),
  mac: z.string().nullable(),
  /** The node's address on the cluster link (the launcher's autodiscover.sh choice), null when it has none. */
  cluster_ip: z.string().nullable().default(null),
  probed_at: z.number(),
  probe_ms: z.number(),
})
export type HardwareOk = z.infer<typeof HardwareOk>

export const HardwareUnreachable = z.object({
  node: z.string(),
  status: z.literal('unreachable'),
  host: z.string(),
  error: z.string(),
  /** unreachable, auth, host_key_changed, timeout, … (null when the probe ran but failed). */
  error_kind: z.string().nullable(),
  /** The SSH port, so the operator can act on this host's key. */
  port: z.number(),
  /** The MAC cached from an earlier successful probe: Wake is possible when set. */
  mac: z.string().nullable(),
  probed_at: z.number(),
  /** When Tandem tries the node again for real (its 25 s memory of the failure ends); null or absent: at the next probe. */
  retry_at: z.number().nullable().optional(),
})

export const HardwareNotConfigured = z.object({ node: z.string(), status: z.literal('not_configured') })

export const NodeHardware = z.discriminatedUnion('status', [HardwareOk, HardwareUnreachable, HardwareNotConfigured])
export type NodeHardware = z.infer<typeof NodeHardware>

/** Every configured node by name: node1 and node2 always, node3… when NODES lists them. */
export const HardwareSnapshot = z
  .object({ node1: NodeHardware, node2: NodeHardware, taken_at: z.number() })
  .catchall(NodeHardware)
export type HardwareSnapshot = z.infer<typeof HardwareSnapshot>

/**
 * A snapshot from each node's reading, node1 and node2 first. Its type reads well (a node's row by
 * name) but `taken_at` beside the node rows cannot be written as one object literal, hence this.
 */
export function hardwareSnapshot(
  node1: NodeHardware,
  node2: NodeHardware,
  more: readonly NodeHardware[],
  takenAt: number,
): HardwareSnapshot {
  const byName: Record<string, NodeHardware> = Object.fromEntries(more.map((hw) => [hw.node, hw]))
  return Object.assign(byName, { node1, node2, taken_at: takenAt })
}

/** A snapshot's node rows in node order: node1, node2, node3, … */
export function snapshotNodes(snapshot: HardwareSnapshot): NodeHardware[] {
  const rows = Object.values(snapshot).filter((v): v is NodeHardware => typeof v === 'object')
  return rows.sort((a, b) => Number(a.node.slice(4)) - Number(b.node.slice(4)))
}

export const HardwareSample = z.object({
  at: z.number(),
  gpu_utilization_pct: z.number().nullable(),
  gpu_temperature_c: z.number().nullable(),
  gpu_power_w: z.number().nullable(),
  load1: z.number().nullable(),
  /** Absent in readings saved before these were recorded. */
  ram_used_bytes: z.number().nullable().default(null),
  ram_total_bytes: z.number().nullable().default(null),
  gpu_memory_used_bytes: z.number().nullable().default(null),
  gpu_memory_total_bytes: z.number().nullable().default(null),
  /** On unified memory: what the engines hold of the pool (ram_used_bytes is the pool in use). */
  engine_memory_bytes: z.number().nullable().default(null),
})
export type HardwareSample = z.infer<typeof HardwareSample>

export const HardwareHistory = z
  .object({ node1: z.array(HardwareSample), node2: z.array(HardwareSample) })
  .catchall(z.array(HardwareSample))

export const ConnState = z.enum(['up', 'down'])

export const TransitionEvent = z.object({
  at: z.number(),
  subject: z.string(),
  kind: z.literal('transition'),
  state: ConnState,
  /** Length of the down period that just ended (an `up` transition). */
  down_seconds: z.number().optional(),
  /** Length of the up period that just ended (a `down` transition). */
  up_seconds: z.number().optional(),
  detail: z.string().optional(),
  /** The down period was planned (a model swap, "planned swap: A → B"), not an outage; on both its ends. */
  planned: z.string().optional(),
})

export const ReportEvent = z.object({
  at: z.number(),
  subject: z.string(),
  kind: z.literal('report'),
  ok: z.boolean(),
  source: z.string().nullable(),
  error: z.string().nullable(),
  detail: z.string().nullable(),
  ms: z.number().nullable(),
})

export const ConnectivityEvent = z.discriminatedUnion('kind', [TransitionEvent, ReportEvent])
export type ConnectivityEvent = z.infer<typeof ConnectivityEvent>

export const SubjectState = z.object({
  state: ConnState,
  last_change: z.number(),
  /** Set while the subject is down for a planned reason (the down transition's `planned`). */
  planned: z.string().optional(),
})

export const ConnectivityView = z.object({
  macs: z.record(z.string(), z.string()),
  subjects: z.record(z.string(), SubjectState),
  /** Oldest first, at most 200. */
  events: z.array(ConnectivityEvent),
})
export type ConnectivityView = z.infer<typeof ConnectivityView>

/**
 * A report's subject: any name an outside app gives (spec 1, 2.7), spaces and letters of any
 * script included. It reaches the log file, the event log and the dashboard, so control, format
 * (bidi, zero-width) and line-separator characters are refused and the length is bounded.
 */
export const HealthSubject = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]+$/u, 'printable characters only')

export const HealthEventInput = z.object({
  service: HealthSubject,
  ok: z.boolean(),
  source: z.string().max(128).optional(),
  error: z.string().max(2000).optional(),
  ms: z.number().min(0).max(86_400_000).optional(),
})

export const WakeAttempt = z.object({ via: z.enum(['relay', 'broadcast']), ok: z.boolean(), detail: z.string() })

export const WakeResult = z.object({
  ok: z.boolean(),
  node: z.string(),
  mac: z.string(),
  /** How the packet finally went out, or null when every path failed. */
  via: z.enum(['relay', 'broadcast']).nullable(),
  relay: z.string().nullable(),
  attempts: z.array(WakeAttempt),
})

/** Unknown: the node the service runs on is unreachable, so its container cannot be read or acted on. */
export const ServiceLabel = z.enum(['Healthy', 'Unhealthy', 'Starting', 'Stopped', 'Unknown', 'Not configured'])

/**
 * The latest deep-health probe of a service as its card carries it (issue 31: the card and the
 * deep-health row show the same latest result).
 */
export const DeepHealthVerdict = z.object({
  ok: z.boolean(),
  wedged: z.boolean(),
  /** When the probe began. */
  at: z.number(),
  /**
   * The service came up again after this probe (its /health turned OK, or its container started):
   * the probe no longer decides the label, and a new one has been asked for.
   */
  stale: z.boolean(),
})
export type DeepHealthVerdict = z.infer<typeof DeepHealthVerdict>

export const ServiceStatus = z.object({
  name: z.string(),
  configured: z.boolean(),
  host: z.string().nullable(),
  port: z.number(),
  container: z.string(),
  /** running, exited, created, restarting, missing (no such container) or unknown (SSH failed). */
  container_state: z.string(),
  restart_count: z.number().nullable(),
  started_at: z.string().nullable(),
  http_ok: z.boolean(),
  http_ms: z.number().nullable(),
  model: z.string().nullable(),
  /** Where clients call it: Tandem's own public /v1 base. */
  base_url: z.string(),
  /** The service's own address (behind Tandem). */
  upstream_url: z.string().nullable(),
  label: ServiceLabel,
  /** Why the label, shown beside it ("node unreachable"); null when the label says it all. */
  label_reason: z.string().nullable(),
  /** Why start, stop and restart are refused now (the node cannot be reached); null: they can be used. */
  actions_blocked: z.string().nullable(),
  error: z.string().nullable(),
  /** The latest deep-health probe (llm, asr and tts only); null: none yet, or not a probed service. */
  deep_health: DeepHealthVerdict.nullable(),
})
export type ServiceStatus = z.infer<typeof ServiceStatus>

/** The placement a service row is the engine of: each placement besides node1's is the service `llm@<placement id>`. */
export const ServicePlacement = Placement.pick({ id: true, key: true, served: true, nodes: true, state: true })
export type ServicePlacement = z.infer<typeof ServicePlacement>

/** A placement's engine as a service (docs/placements.md, Services): its row beside llm, asr and tts. */
export const PlacementServiceStatus = ServiceStatus.extend({ placement: ServicePlacement })
export type PlacementServiceStatus = z.infer<typeof PlacementServiceStatus>

export const StatusView = z.object({
  llm: ServiceStatus,
  asr: ServiceStatus,
  tts: ServiceStatus,
  /** Every placement besides node1's (node1's is the llm), in placement-id order. */
  placements: z.array(PlacementServiceStatus),
  checked_at: z.number(),
})
export type StatusView = z.infer<typeof StatusView>

const Endpoint = z.object({ base_url: z.string(), model: z.string().nullable(), ready: z.boolean() })
export const EndpointsView = z.object({ llm: Endpoint, asr: Endpoint, tts: Endpoint })

export const PublicKeyView = z.object({
  public_key: z.string(),
  fingerprint: z.string(),
  nodes: z.array(
    z.object({
      node: z.string(),
      host: z.string(),
      user: z.string(),
      port: z.number(),
      /** Run on an admin machine that can already reach the node. */
      command: z.string(),
      /** Run on the node itself. */
      remote_command: z.string(),
    }),
  ),
})

export const KnownHost = z.object({ name: z.string(), type: z.string(), fingerprint: z.string(), added_at: z.number() })

/** An SSH key fingerprint as `ssh-keygen -l` prints it. */
export const HostKeyFingerprint = z
  .string()
  .regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'an SSH key fingerprint (SHA256: and 43 base64 characters)')

/** A host key a node presented that Tandem refused: changed, or not yet confirmed. */
export const PresentedHostKey = z.object({
  host: z.string(),
  port: z.number(),
  type: z.string(),
  fingerprint: z.string(),
  /** The key trusted before (a changed key); null when none is known. */
  expected_fingerprint: z.string().nullable(),
  seen_at: z.number(),
})

export const PendingHostKeys = z.object({
  /** True once known_hosts.json was found unreadable: no new host key is trusted without confirmation. */
  confirmation_required: z.boolean(),
  /** Where the unreadable file was kept aside (null when it could not be moved or nothing happened). */
  kept_as: z.string().nullable(),
  pending: z.array(PresentedHostKey),
})

export const nodesContract = {
  getHardware: method({
    summary: 'Hardware snapshot of every configured node, probed in parallel over SSH (cached 4 s)',
    http: 'GET /api/hardware',
    input: z.object({ fresh: z.union([z.boolean(), z.stringbool()]).optional() }),
    output: HardwareSnapshot,
  }),
  getHardwareHistory: method({
    summary: 'GPU and load readings of each node over the last 15 minutes (oldest first)',
    http: 'GET /api/hardware/history',
    input: z.object({}),
    output: HardwareHistory,
  }),
  getConnectivity: method({
    summary: 'Cached MACs, per-subject state and last change, and the rolling event log',
    http: 'GET /api/connectivity',
    input: z.object({}),
    output: ConnectivityView,
  }),
  healthEvent: method({
    summary: 'Record a failure or recovery an outside app saw (a report; never changes state)',
    http: 'POST /api/health-event',
    limit: 'health-event',
    input: HealthEventInput,
    output: z.object({ ok: z.literal(true), event: ReportEvent }),
  }),
  wakeNode: method({
    summary: 'Send a Wake-on-LAN packet to a node (from the other node over SSH, else broadcast)',
    http: 'POST /api/node/:name/wake',
    input: z.object({ name: NodeName, mac: MacAddress.optional() }),
    output: WakeResult,
  }),
  getStatus: method({
    summary: 'llm, asr and tts: configured, container state, HTTP health, model (records state changes)',
    http: 'GET /api/status',
    input: z.object({}),
    output: StatusView,
  }),
  getEndpoints: method({
    summary: 'Discovery: where clients reach llm, asr and tts through Tandem',
    http: 'GET /api/endpoints',
    input: z.object({}),
    output: EndpointsView,
  }),
  getSshPublicKey: method({
    summary: "Tandem's SSH public key and a ready-to-paste authorized_keys command per node",
    http: 'GET /api/ssh/public-key',
    input: z.object({}),
    output: PublicKeyView,
  }),
  listKnownHosts: method({
    summary: 'Host keys trusted so far',
    http: 'GET /api/ssh/known-hosts',
    input: z.object({}),
    output: z.array(KnownHost),
  }),
  forgetHostKey: method({
    summary: "Forget a host's trusted key (after a node was reinstalled)",
    http: 'DELETE /api/ssh/known-hosts',
    input: z.object({
      host: SshHost,
      port: Port.default(22),
    }),
    output: z.object({ forgotten: z.boolean() }),
  }),
  listPendingHostKeys: method({
    summary: 'Host keys nodes presented that were refused (changed or not yet confirmed), to trust one',
    http: 'GET /api/ssh/known-hosts/pending',
    input: z.object({}),
    output: PendingHostKeys,
  }),
  trustHostKey: method({
    summary: 'Trust the host key a node presented, named by its fingerprint (refused if it is not the one presented)',
    http: 'POST /api/ssh/known-hosts/trust',
    input: z.object({ host: SshHost, port: Port.default(22), fingerprint: HostKeyFingerprint }),
    output: z.object({ trusted: z.literal(true), name: z.string(), fingerprint: z.string() }),
  }),
} satisfies ContractTable
