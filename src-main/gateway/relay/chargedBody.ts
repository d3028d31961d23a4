import type http from 'node:http'
import { ApiError } from '../../contract/errors'
import { bodyTooLarge } from '../../http/body'
import { ArrivingBody } from './arrivingBody'
import { bodyCost, type BodyBudget, type BodyReservation } from './bodyBudget'
import type { RelayBodyParser } from './relayBodyParser'
import type { RelayRequest } from './wire'

/** What a relayed body's arrival needs: its limits, the budget it is charged to and the parser that reads it. */
export interface ChargedBodyDeps {
  readonly bodyLimit: number
  readonly bodyBudget: BodyBudget
  /** A body that sends nothing for this long is answered 408 and its room released. */
  readonly bodyIdleMs: number
  readonly parser: RelayBodyParser
}

/** Where a body's arrival ends: read (what the relay needs of it, and its bytes as they came), or refused. */
export interface BodyOutcome {
  read(request: RelayRequest, raw: Buffer): void
  refused(err: unknown): void
}

/**
 * A relayed request's body from its first byte until its answer ends: charged to the body budget
 * as its bytes arrive (a declared length only bounds it), cut short with a 408 when it sends nothing
 * for the idle window, and read by the parser once it has ended. Its room in the budget is held
 * until `release` (the answer's end), whatever happened before.
 */
export class ChargedBody {
  private readonly arriving: ArrivingBody
  private readonly reservation: BodyReservation
  private declared = 0
  /** Answers 408 when the body sends nothing for the idle window. */
  private idle: NodeJS.Timeout | null = null
  /** Reading: not yet ended, refused or released. */
  private open = true

  constructor(
    private readonly deps: ChargedBodyDeps,
    private readonly req: http.IncomingMessage,
    holders: readonly string[],
    private readonly outcome: BodyOutcome,
  ) {
    this.arriving = new ArrivingBody(deps.parser)
    this.reservation = deps.bodyBudget.open(holders)
  }

  /** Starts reading; throws (413) when the declared length could never fit, before any byte is read. */
  start(): void {
    const declared = Number(this.req.headers['content-length'] ?? NaN)
    if (declared > this.deps.bodyLimit) throw bodyTooLarge(this.deps.bodyLimit)
    // The budget is charged as bytes arrive (a declared length costs nothing until they do); a
    // declared body one client could never hold is refused before any is read.
    if (Number.isSafeInteger(declared) && declared > 0) {
      this.reservation.bound(bodyCost(declared))
      this.declared = declared
    }
    this.idle = setTimeout(this.bodyIdle, this.deps.bodyIdleMs)
    this.idle.unref()
    this.req.on('data', this.onData)
    this.req.on('end', this.onEnd)
  }

  private readonly onData = (chunk: Buffer): void => {
    if (!this.open) return // answered already (the body deadline): the rest is dropped
    const at = this.arriving.length
    try {
      if (at + chunk.length > this.deps.bodyLimit) throw bodyTooLarge(this.deps.bodyLimit)
      this.reservation.charge(bodyCost(chunk.length))
    } catch (err) {
      return this.refuse(err)
    }
    // The buffer is allocated with the first byte, not with the head: an idle socket costs nothing.
    if (at === 0 && ArrivingBody.wantsBufferAhead(this.declared)) {
      const ahead = this.reservation.bufferAhead(this.declared)
      if (ahead !== null) this.arriving.allocatedAhead(ahead, this.reservation.aheadWarmed)
    }
    this.arriving.add(chunk)
    this.idle?.refresh()
  }

  /** Nothing arrived for the idle window: the body's room goes back to everyone else. */
  private readonly bodyIdle = (): void => {
    this.idle = null
    if (!this.open || this.req.complete) return
    this.refuse(bodyIdleTimeout(this.deps.bodyIdleMs))
  }

  private readonly onEnd = (): void => {
    if (!this.open) return
    this.open = false
    this.stopIdle()
    // The body is no longer held once taken (its reservation stays until the answer ends).
    const received = this.arriving.take()
    if (received === null) return
    this.deps.parser.parse(received).then(
      (request) => this.outcome.read(request, received),
      (err: unknown) => this.outcome.refused(err),
    )
  }

  private refuse(err: unknown): void {
    this.stopReading()
    this.outcome.refused(err)
  }

  /** Stops reading what is left of the body (it is read and dropped by Node). */
  private stopReading(): void {
    this.open = false
    this.req.off('data', this.onData)
    this.req.off('end', this.onEnd)
    this.req.resume()
  }

  private stopIdle(): void {
    if (this.idle !== null) clearTimeout(this.idle)
    this.idle = null
  }

  /**
   * The request ended (answered or failed): the bytes and the body's room go. `recycle`: it ended
   * with the whole answer, so its buffer may serve the next large body. Safe to call more than once.
   */
  release(recycle = false): void {
    this.open = false
    this.arriving.drop()
    this.stopIdle()
    this.reservation.release(recycle)
  }
}

/** The 408 for a body that sent nothing for `ms`. */
function bodyIdleTimeout(ms: number): ApiError {
  return new ApiError('request_timeout', `the request body sent nothing for ${Math.round(ms / 100) / 10} s`, {
    status: 408,
  })
}
