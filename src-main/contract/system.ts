import { z } from 'zod'
import { method } from './define'
import { JobId, NodeName } from './schemas'
import { SettingChanges, SettingView } from '../config/settingView'

export const JobKind = z.enum(['download', 'update', 'prebuilt', 'swap'])
export type JobKind = z.infer<typeof JobKind>

export const JobProgress = z.object({
  percent: z.number().nullable(),
  bytes_done: z.number().nullable(),
  bytes_total: z.number().nullable(),
  /** Bytes per second. */
  rate: z.number().nullable(),
  eta_s: z.number().nullable(),
})
export type JobProgress = z.infer<typeof JobProgress>

export const JobState = z.enum(['running', 'succeeded', 'failed', 'cancelled'])

export const JobRecord = z.object({
  id: z.string(),
  kind: JobKind,
  title: z.string(),
  state: JobState,
  phase: z.string(),
  started_at: z.number(),
  finished_at: z.number().nullable(),
  elapsed_s: z.number(),
  progress: JobProgress.nullable(),
  /** The last lines of output (bounded); the stream replays the full retained log. */
  log: z.array(z.string()),
  result: z.unknown().nullable(),
  error: z.string().nullable(),
})
export type JobRecord = z.infer<typeof JobRecord>

export const JobEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('phase'), seq: z.number(), phase: z.string() }),
  z.object({ type: z.literal('log'), seq: z.number(), line: z.string() }),
  z.object({ type: z.literal('progress'), seq: z.number(), progress: JobProgress }),
  z.object({
    type: z.literal('end'),
    seq: z.number(),
    state: JobState,
    error: z.string().nullable(),
    result: z.unknown().nullable(),
  }),
])
export type JobEvent = z.infer<typeof JobEvent>

export const NodeRole = z.object({ host: z.string(), user: z.string(), ssh_port: z.number(), configured: z.boolean() })

export const PublicConfig = z.object({
  name: z.literal('Tandem'),
  version: z.string(),
  chat_ui_url: z.string().nullable(),
  public_url: z.string().nullable(),
  data_dir: z.string(),
  /** The configured nodes, in order (node1, node2, then NODES' entries). */
  nodes: z.array(NodeName),
  settings: z.array(SettingView),
  roles: z.object({
    node1: NodeRole,
    node2: NodeRole,
    llm: z.object({ node: z.literal('node1'), port: z.number(), container: z.string() }),
    asr: z.object({
      host: z.string(),
      user: z.string(),
      container: z.string(),
      port: z.number(),
      configured: z.boolean(),
    }),
    tts: z.object({
      host: z.string(),
      user: z.string(),
      container: z.string(),
      port: z.number(),
      configured: z.boolean(),
    }),
  }),
  warnings: z.array(z.string()),
})
export type PublicConfig = z.infer<typeof PublicConfig>

const Ok = z.object({ ok: z.literal(true) })

export const SettingProblem = z.object({ name: z.string(), message: z.string() })

/** What a restart applied, and what only a restart of the process itself can apply. */
export const RestartOutcome = z.object({
  restarted: z.literal(true),
  /** Saved settings the running process cannot take in-process (the listening socket), empty when none. */
  process_restart_needed: z.array(z.string()),
  /** Exactly what to do for those, or null when nothing is left. */
  process_restart_hint: z.string().nullable(),
})
export type RestartOutcome = z.infer<typeof RestartOutcome>

/** A part of Tandem that can be off while the rest runs (e.g. licensing with an unreadable database). */
export const ComponentHealth = z.object({
  state: z.enum(['ok', 'degraded']),
  /** Why it is degraded (no file paths: /api/health is open); null when ok. */
  reason: z.string().nullable(),
  /** What the operator can do about it; null when ok. */
  remedy: z.string().nullable(),
})
export type ComponentHealth = z.infer<typeof ComponentHealth>

export const HealthComponents = z.object({
  licensing: ComponentHealth,
  /** Free space of the volume holding DATA_DIR: degraded under 1 GiB, before state writes fail. */
  storage: ComponentHealth,
})
export type HealthComponents = z.infer<typeof HealthComponents>

export const systemContract = {
  health: method({
    summary: 'Liveness (answers as soon as the HTTP server is up), with the state of parts that can be off',
    http: 'GET /api/health',
    input: z.object({}),
    output: z.object({
      ok: z.literal(true),
      version: z.string(),
      uptime_s: z.number(),
      components: HealthComponents,
    }),
  }),
  getConfig: method({
    summary: 'Effective configuration, secrets masked, with the source of each value',
    http: 'GET /api/config',
    input: z.object({}),
    output: PublicConfig,
  }),
  saveSettings: method({
    summary: 'Save settings to DATA_DIR/settings.json (values fixed by the environment are refused)',
    http: 'PUT /api/settings',
    input: z.object({ values: SettingChanges }),
    output: z.object({ saved: z.array(z.string()), restart_required: z.boolean() }),
  }),
  checkSettings: method({
    summary: 'Check setting changes without saving: each problem in words, by setting',
    http: 'POST /api/settings/check',
    input: z.object({ values: SettingChanges }),
    output: z.object({ errors: z.array(SettingProblem) }),
  }),
  restartServices: method({
    summary: 'Apply saved settings: stop every service, re-read the configuration and start them again in-process',
    http: 'POST /api/restart',
    input: z.object({}),
    output: RestartOutcome,
  }),
  login: method({
    summary: 'Exchange the admin token for a session cookie',
    http: 'POST /api/login',
    httpOnly: true,
    input: z.object({ token: z.string().min(1).max(512) }),
    output: Ok,
  }),
  logout: method({
    summary: 'End the admin session',
    http: 'POST /api/logout',
    httpOnly: true,
    input: z.object({}),
    output: Ok,
  }),
  session: method({
    summary: 'Whether the caller holds an admin session',
    http: 'GET /api/session',
    input: z.object({}),
    output: z.object({ authenticated: z.boolean() }),
  }),
  listJobs: method({
    summary: 'Recent jobs, newest first',
    http: 'GET /api/jobs',
    input: z.object({ kind: JobKind.optional() }),
    output: z.array(JobRecord),
  }),
  getJob: method({
    summary: 'One job record',
    http: 'GET /api/jobs/:id',
    input: z.object({ id: JobId }),
    output: JobRecord,
  }),
  streamJob: method({
    summary: 'A job’s events: everything so far, then live until it ends',
    http: 'GET /api/jobs/:id/stream',
    stream: true,
    input: z.object({
      id: JobId,
      after: z.coerce.number().int().min(0).optional(),
    }),
    output: JobEvent,
  }),
  cancelJob: method({
    summary: 'Ask a running job to stop',
    http: 'POST /api/jobs/:id/cancel',
    input: z.object({ id: JobId }),
    output: JobRecord,
  }),
}
