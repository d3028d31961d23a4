import { z } from 'zod'
import { method, type ContractTable } from './define'
import { ServicePlacement, ServiceStatus } from './nodes'
import { JobEvent, JobRecord } from './system'
import { PlacementId } from './placements'
import { ContainerName, EnvMap, ImageRef, JobId, NodeName, Port, ServiceName, VolumeSource } from './schemas'

/**
 * The services and operations methods (spec 1, 1.7–1.9, 2.5, 2.8, 3.1, 3.3, 4.4–4.7): always-on and
 * custom services and their actions, prebuilt installs, deep health with rate-limited auto-restart,
 * speech model patches, and upstream launcher updates.
 */

export const ServiceAction = z.enum(['start', 'stop', 'restart'])

export const ServiceRecord = ServiceStatus.extend({
  /** Installed from the prebuilt catalog or added by the operator (SERVICES_OVERRIDES); removable. */
  custom: z.boolean(),
  node: NodeName.nullable(),
  /** The placement whose engine this is (`llm@<placement id>`); null for llm, asr, tts and custom services. */
  placement: ServicePlacement.nullable(),
  /** The last label changes, newest last. */
  recent_changes: z.array(z.object({ at: z.number(), from: z.string().nullable(), to: z.string() })),
})
export type ServiceRecord = z.infer<typeof ServiceRecord>

export const PrebuiltImage = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['asr', 'tts', 'speech-platform']),
  image: z.string(),
  container: z.string(),
  port: z.number(),
  /** Mounted at the image's model cache path. */
  volume: z.string(),
  cache_path: z.string(),
  env: z.record(z.string(), z.string()),
  description: z.string(),
  needs_registry_key: z.boolean(),
})

export const PrebuiltInstallInput = z.object({
  image: ImageRef,
  container: ContainerName,
  volume: VolumeSource,
  /** Where the volume is mounted inside the container (the image's model cache). */
  cache_path: z
    .string()
    .max(512)
    .regex(/^\/[A-Za-z0-9._/-]*$/, 'an absolute path')
    .default('/root/.cache'),
  port: Port,
  /** The container's own port, when it differs from the published one. */
  container_port: Port.optional(),
  env: EnvMap.default({}),
  node: NodeName.default('node2'),
  /** Serve as the asr or tts role (replacing the configured container) or as a custom service only. */
  role: z.enum(['asr', 'tts']).nullable().default(null),
})

/** The limit that held a requested restart back; `swap`: the llm is never restarted while a model swap holds it. */
export const RestartHold = z.enum(['grace', 'cooldown', 'cap', 'swap'])

/** A placement other than node1's as a deep-health subject: `llm@` and its id (node1's placement is `llm`). */
export const PlacementProbeSubject = z
  .string()
  .max(404)
  .refine((s) => s.startsWith('llm@') && PlacementId.safeParse(s.slice(4)).success, {
    message: 'llm@ and a placement id, such as llm@node3 or llm@node3+node4',
  })

/** What a deep-health probe checks: a service (asr, tts, llm, or a name it does not probe: 404), or a placement. */
export const DeepHealthSubject = z.union([ServiceName, PlacementProbeSubject])

export const DeepHealthResult = z.object({
  /** asr, tts, llm (node1's engine) or `llm@<placement id>` for another placement. */
  service: z.string(),
  ok: z.boolean(),
  at: z.number(),
  latency_ms: z.number().nullable(),
  /** The first part of the error, secrets redacted. */
  error: z.string().nullable(),
  /** e.g. "no model currently loaded (idle)". */
  note: z.string().nullable(),
  /** The error carries a known wedge error (cudaErrorUnknown, …); a bare HTTP 500 is restarted but not wedged. */
  wedged: z.boolean(),
  restart: z.object({
    requested: z.boolean(),
    done: z.boolean(),
    /** The limit that held a requested restart back. */
    held_by: RestartHold.nullable(),
    detail: z.string().nullable(),
  }),
})
export type DeepHealthResult = z.infer<typeof DeepHealthResult>

export const DeepHealthView = z.object({
  interval_s: z.number(),
  services: z.array(
    z.object({
      service: z.string(),
      configured: z.boolean(),
      running: z.boolean(),
      last: DeepHealthResult.nullable(),
      restarts_last_30m: z.number(),
      last_restart_at: z.number().nullable(),
      total_restarts: z.number(),
    }),
  ),
})

export const OverlayStatus = z.enum(['in_sync', 'drift', 'missing'])

export const SpeechModelsView = z.object({
  container: z.string(),
  files: z.array(
    z.object({
      name: z.string(),
      path: z.string(),
      local_sha256: z.string(),
      container_sha256: z.string().nullable(),
      status: OverlayStatus,
    }),
  ),
  model: z.object({ ready: z.boolean(), name: z.string().nullable(), detail: z.string().nullable() }),
  checked_at: z.number(),
  error: z.string().nullable(),
})

export const StepResult = z.object({
  ok: z.boolean(),
  steps: z.array(z.object({ step: z.string(), ok: z.boolean(), detail: z.string() })),
})

export const PendingCommit = z.object({ sha: z.string(), subject: z.string(), author: z.string(), date: z.string() })

/** Spec 1, 2.8: the launcher checkout against its origin. */
export const UpdateStatus = z.object({
  ok: z.boolean(),
  ahead: z.number(),
  behind: z.number(),
  dirty: z.boolean(),
  dirty_files: z.array(z.string()),
  current: z.boolean(),
  branch: z.string().nullable(),
  pending: z.array(PendingCommit),
  log: z.array(z.string()),
  checked_at: z.number(),
  error: z.string().nullable(),
})

export const ExplainChunk = z.discriminatedUnion('type', [
  z.object({ type: z.literal('reasoning'), text: z.string() }),
  z.object({ type: z.literal('answer'), text: z.string() }),
  z.object({ type: z.literal('done'), model: z.string(), commits: z.number() }),
])

const NameParam = z.object({ name: ServiceName })
/** A service, or a placement's engine as `llm@<placement id>` (its restart re-places it; its logs are its engine's). */
const ActedName = z.object({ name: z.union([ServiceName, PlacementProbeSubject]) })
const JobIdParam = z.object({ id: JobId })

export const servicesContract = {
  listServices: method({
    summary: "llm, each placement's engine (llm@<placement id>), asr, tts and custom services: state, health, label",
    http: 'GET /api/services',
    input: z.object({}),
    output: z.object({ services: z.array(ServiceRecord), checked_at: z.number() }),
  }),
  serviceAction: method({
    summary:
      "Start, stop or restart a service's container (409 while a swap holds the llm); llm@<placement id>: restart re-places it",
    http: 'POST /api/services/:name/:action',
    input: ActedName.extend({ action: ServiceAction }),
    output: z.object({
      name: z.string(),
      action: ServiceAction,
      ok: z.boolean(),
      container_state: z.string(),
      detail: z.string(),
    }),
  }),
  serviceLogs: method({
    summary: "A service container's last log lines (secrets redacted)",
    http: 'GET /api/services/:name/logs',
    input: ActedName.extend({ tail: z.coerce.number().int().min(1).max(5000).default(200) }),
    output: z.object({ name: z.string(), container: z.string(), lines: z.array(z.string()) }),
  }),
  deleteService: method({
    summary: 'Remove a custom service (the container is stopped and removed; always-on services answer 409)',
    http: 'DELETE /api/services/:name',
    input: NameParam,
    output: z.object({ deleted: z.literal(true) }),
  }),
  prebuiltCatalog: method({
    summary: 'Suggested prebuilt inference images (speech recognition, speech synthesis, a speech platform)',
    http: 'GET /api/prebuilt/catalog',
    input: z.object({}),
    output: z.object({ images: z.array(PrebuiltImage) }),
  }),
  prebuiltInstall: method({
    summary: 'Install a prebuilt container (a job): registry login, pull, run with all GPUs, persist as a service',
    http: 'POST /api/prebuilt/install',
    input: PrebuiltInstallInput,
    output: z.object({ job_id: z.string() }),
  }),
  getPrebuiltInstall: method({
    summary: 'One install job',
    http: 'GET /api/prebuilt/install/:id',
    input: JobIdParam,
    output: JobRecord,
  }),
  streamPrebuiltInstall: method({
    summary: 'An install’s phases and log (registry key redacted): everything so far, then live',
    http: 'GET /api/prebuilt/install/:id/stream',
    stream: true,
    input: JobIdParam.extend({ after: z.coerce.number().int().min(0).optional() }),
    output: JobEvent,
  }),
  getDeepHealth: method({
    summary: 'Per service: the last deep-health probe and the auto-restart counters',
    http: 'GET /api/deep-health',
    input: z.object({}),
    output: DeepHealthView,
  }),
  runDeepHealth: method({
    summary: 'Run one service’s (or placement’s, as llm@<placement id>) deep-health probe now',
    http: 'POST /api/deep-health/:service/run',
    input: z.object({ service: DeepHealthSubject }),
    output: DeepHealthResult,
  }),
  getSpeechModels: method({
    summary: 'Overlay files locally and inside the asr container (sha256: in_sync, drift, missing) and model readiness',
    http: 'GET /api/speech-models',
    input: z.object({}),
    output: SpeechModelsView,
  }),
  reapplySpeechModels: method({
    summary: 'Copy the overlays into the asr container, check their syntax, restart, wait for health',
    http: 'POST /api/speech-models/reapply',
    input: z.object({}),
    output: StepResult,
  }),
  restartSpeechModels: method({
    summary: 'Plain restart of the asr container',
    http: 'POST /api/speech-models/restart',
    input: z.object({}),
    output: StepResult,
  }),
  getUpdates: method({
    summary: 'The launcher checkout against origin: ahead, behind, dirty, pending commits',
    http: 'GET /api/updates',
    input: z.object({}),
    output: UpdateStatus,
  }),
  applyUpdates: method({
    summary: 'Fast-forward pull, then build-and-copy.sh (a job; refused while dirty)',
    http: 'POST /api/updates/apply',
    input: z.object({}),
    output: z.object({ job_id: z.string() }),
  }),
  explainUpdates: method({
    summary: "The loaded llm's explanation of the pending commits, reasoning kept apart from the answer",
    http: 'POST /api/explain-updates',
    stream: true,
    input: z.object({}),
    output: ExplainChunk,
  }),
} satisfies ContractTable
