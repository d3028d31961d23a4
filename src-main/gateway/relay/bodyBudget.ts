import { ApiError } from '../../contract/errors'
import type { ConsumerIdentity } from '../keys/consumerKeyStore'
import { BodyBuffers, type LentBuffer } from './bodyBuffers'
import { MiB } from './wire'

/**
 * The memory all relayed JSON bodies (chat, completions, embeddings) may hold together while they
 * are read, checked and sent upstream, charged as their bytes arrive (a declared length reserves
 * nothing: an idle socket holds no room). Each body is also charged to its client address and, when
 * it came with one, its consumer key; neither may hold more than a share of the budget, so one
 * client can never take all of it and the next client always finds room. A key sold with a license
 * (issue 45) may hold a third: two buyers holding all they may leave a whole share to a third.
 */
export interface BodyBudgetLimits {
  /** Bytes all bodies in progress may hold together. */
  readonly totalBytes: number
  /** Bytes the bodies of one address, or of one of the operator's keys, may hold together. */
  readonly shareBytes: number
  /** Bytes the bodies of one key sold with a license may hold together. */
  readonly soldKeyShareBytes: number
}

/** How long a client refused for want of room is asked to wait: bodies are held for one relayed call. */
export const BODY_BUDGET_RETRY_S = 5

const mib = (n: number): string => `${Math.ceil(n / MiB)} MiB`

/**
 * The memory a body of `bytes` costs while the relay holds it: its chunks as they arrived, and as
 * much again for the one buffer they are joined into when it ends (both live for a moment).
 */
export function bodyCost(bytes: number): number {
  return 2 * bytes
}

/** The budget as a setting gives it: one address or key may hold half of it, a sold key a third. */
export function bodyBudgetLimits(totalBytes: number): BodyBudgetLimits {
  return { totalBytes, shareBytes: Math.floor(totalBytes / 2), soldKeyShareBytes: Math.floor(totalBytes / 3) }
}

/** The holder name of a key sold with a license: its share is `soldKeyShareBytes`. */
const SOLD_KEY = 'sold key '

/** Whom a body is charged to: its address (always) and its consumer key (a named or legacy key). */
export function bodyHolders(limitKey: string, who: ConsumerIdentity | undefined): readonly string[] {
  if (who?.kind === 'key') return [`address ${limitKey}`, `${who.licensed ? SOLD_KEY : 'key '}${who.id}`]
  if (who?.kind === 'legacy') return [`address ${limitKey}`, 'key (legacy)']
  return [`address ${limitKey}`]
}

export class BodyBudget {
  private used = 0
  /** Bytes of declared-length buffers allocated ahead of their bytes (address space, not yet memory). */
  private ahead = 0
  /** Bytes held per holder; a holder is removed when it holds nothing. */
  private readonly held = new Map<string, number>()
  /** Large bodies' buffers, reused once a call has ended well (at most half the budget waits idle). */
  readonly buffers: BodyBuffers

  constructor(readonly limits: BodyBudgetLimits) {
    this.buffers = new BodyBuffers(Math.floor(limits.totalBytes / 2))
  }

  /** A reservation for one body, charged to `holders` as its bytes are known (see BodyReservation.charge). */
  open(holders: readonly string[]): BodyReservation {
    return new BodyReservation(this, holders)
  }

  /** Bytes held by bodies in progress. */
  get inUse(): number {
    return this.used
  }

  /** Bytes held by one holder's bodies in progress. */
  heldBy(holder: string): number {
    return this.held.get(holder) ?? 0
  }

  /** What one holder's bodies may hold together. */
  shareOf(holder: string): number {
    return holder.startsWith(SOLD_KEY) ? this.limits.soldKeyShareBytes : this.limits.shareBytes
  }

  /** @internal 413 when one body of `total` bytes could never fit in what its holders may hold. */
  bound(holders: readonly string[], total: number): void {
    const shareBytes = Math.min(...holders.map((h) => this.shareOf(h)))
    if (total > shareBytes)
      throw new ApiError(
        'payload_too_large',
        `request body is too large for the gateway's body budget: one client may hold ${mib(shareBytes)}, and a body costs twice its size`,
      )
  }

  /** @internal Charges `bytes` to every holder, or throws (413, 503) and charges nothing. */
  take(holders: readonly string[], bytes: number, total: number): void {
    const { totalBytes } = this.limits
    this.bound(holders, total)
    if (this.used + bytes > totalBytes)
      throw full(`request bodies in progress hold ${mib(this.used)} of ${mib(totalBytes)}`)
    for (const h of holders)
      if (this.heldBy(h) + bytes > this.shareOf(h))
        throw full(
          `this ${h.startsWith('address ') ? 'address' : 'key'}'s bodies in progress hold ${mib(this.heldBy(h))} of the ${mib(this.shareOf(h))} it may hold`,
        )
    this.used += bytes
    for (const h of holders) this.held.set(h, this.heldBy(h) + bytes)
  }

  /**
   * @internal Room to allocate a declared body's buffer before its bytes arrive, so they are copied
   * in place as they come (a fresh 60 MB buffer filled at once stalls the loop on page faults). Only
   * address space, but bounded all the same: at most the budget's total of it at a time.
   */
  allocateAhead(bytes: number): boolean {
    if (this.ahead + bytes > this.limits.totalBytes) return false
    this.ahead += bytes
    return true
  }

  /** @internal */
  freeAhead(bytes: number): void {
    this.ahead -= bytes
  }

  /** @internal */
  give(holders: readonly string[], bytes: number): void {
    this.used -= bytes
    for (const h of holders) {
      const left = this.heldBy(h) - bytes
      if (left > 0) this.held.set(h, left)
      else this.held.delete(h)
    }
  }
}

function full(why: string): ApiError {
  return new ApiError('unavailable', `the gateway has no room for this request body now (${why}); retry shortly`, {
    headers: { 'Retry-After': String(BODY_BUDGET_RETRY_S) },
  })
}

/** One body's room in the budget; `release` frees it, once, whatever happened before. */
export class BodyReservation {
  private bytes = 0
  private ahead = 0
  private lent: LentBuffer | null = null
  private released = false

  constructor(
    private readonly budget: BodyBudget,
    private readonly holders: readonly string[],
  ) {}

  /** Bytes this body holds. */
  get held(): number {
    return this.bytes
  }

  /** 413 when a body declaring `total` (its cost) could never fit; charges nothing (bytes are charged as they arrive). */
  bound(total: number): void {
    this.budget.bound(this.holders, total)
  }

  /** Charges `n` more bytes as they arrive; throws 413 or 503 when they do not fit. */
  charge(n: number): void {
    if (this.released) return
    this.budget.take(this.holders, n, this.bytes + n)
    this.bytes += n
  }

  /**
   * A buffer of the declared `length` to copy the body into as it arrives, when the budget allows
   * allocating it ahead (see BodyBudget.allocateAhead); null when it does not (the chunks are then
   * joined at the end). Its bytes are still charged only as they arrive. Shared with the body
   * parser's worker, which reads a large body in place (relayBodyParser.ts).
   */
  bufferAhead(length: number): Buffer | null {
    if (this.released || this.ahead > 0 || !this.budget.allocateAhead(length)) return null
    this.ahead = length
    this.lent = this.budget.buffers.lend(length)
    return this.lent.view
  }

  /** Whether the buffer bufferAhead gave is already in memory (reused): nothing needs to write it through first. */
  get aheadWarmed(): boolean {
    return this.lent?.warmed ?? false
  }

  /**
   * Frees the body's room. `recycle`: the call ended with its whole answer, so nothing reads or
   * writes the body's buffer any more and it may serve the next large body. Safe to call more than once.
   */
  release(recycle = false): void {
    if (this.released) return
    this.released = true
    if (recycle && this.lent !== null) this.budget.buffers.giveBack(this.lent.whole)
    this.lent = null
    this.budget.give(this.holders, this.bytes)
    this.budget.freeAhead(this.ahead)
    this.bytes = 0
    this.ahead = 0
  }
}
