import type { Router } from 'express'
import type { ContractTable, Handlers } from '../contract/define'

/**
 * A domain as the composition root sees it: the handlers for its slice of the contract, any
 * HTTP-only routes that cannot be contract methods (proxies, multipart uploads, provider
 * webhooks, HTML pages), and its background lifecycle.
 */
export interface DomainModule<C extends ContractTable> {
  readonly name: string
  readonly handlers: Handlers<C>
  /** Mounted after the auth and origin middleware; which surface a path belongs to is decided in http/surfaces.ts. */
  mountRoutes?(router: Router): void
  start?(): Promise<void> | void
  stop?(): Promise<void> | void
}

/** What every domain module is built from. Domain-specific dependencies are passed beside it. */
export interface CoreDeps {
  readonly config: import('../config/load').Config
  readonly clock: import('../lib/clock').Clock
  readonly logger: import('../lib/logger').Logger
  readonly jobs: import('./jobs').JobRegistry
  /** The named per-address limiters (methods declare theirs; HTML pages use the same ones). */
  readonly limits: import('./limits').Limits
  readonly events: import('./eventBus').EventBus
  /** Who is calling the contract method in progress (for the audit log); absent in tests that build one module. */
  readonly callers?: import('./callerScope').CallerScope
}
