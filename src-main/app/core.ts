import type { Config } from '../config/load'
import type { Contract, ContractHandlers } from '../contract'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobRegistry } from '../platform/jobs'
import type { EventBus } from '../platform/eventBus'
import type { DomainModule } from '../platform/domainModule'
import type { Limits } from '../platform/limits'
import type { CallerScope } from '../platform/callerScope'
import type { UntrustedProxies } from '../platform/untrustedProxies'
import type { Credentials } from './credentials'
import type { Dispatcher } from './invoke'
import type { SessionStore } from './sessions'

/** Everything the process runs, built from Config. HTTP and IPC adapters sit on top of it. */
export interface Core {
  readonly config: Config
  readonly clock: Clock
  readonly logger: Logger
  readonly jobs: JobRegistry
  /** Push events (contract/events.ts): services publish, GET /api/events and IPC deliver. */
  readonly events: EventBus
  /** Null when the admin-token file was rejected: every admin call is refused until a new one is set. */
  readonly adminToken: string | null
  readonly adminTokenSource: 'setting' | 'file'
  readonly handlers: ContractHandlers
  /** Handlers, limits and logger: what both transports dispatch contract calls through. */
  readonly dispatcher: Dispatcher
  readonly modules: readonly DomainModule<Partial<Contract>>[]
  readonly limits: Limits
  readonly credentials: Credentials
  readonly sessions: SessionStore
  /** Who is calling, for the audit log: entered per contract call and per HTTP domain route. */
  readonly callers: CallerScope
  /** Peers forwarding for others without being in TRUSTED_PROXIES: the edge reports them, the Settings page shows them. */
  readonly untrustedProxies: UntrustedProxies
  start(): Promise<void>
  stop(): Promise<void>
}
