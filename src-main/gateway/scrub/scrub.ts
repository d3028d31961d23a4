import { randomUUID } from 'node:crypto'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../lib/clock'
import {
  detectSliced,
  drain,
  finishSliced,
  SLICE_CHARS,
  SLICE_ITEMS,
  type EntityType,
  type Finding,
  type Work,
} from './scrubDetect'

export { detect, entropy, ibanValid, luhnValid, type EntityType, type Finding } from './scrubDetect'

/**
 * The redaction gateway (spec 1, 1.12): swaps each finding for a stable placeholder (`[EMAIL_1]`:
 * the same value always gets the same one within a session) and puts the originals back later,
 * also inside text an LLM has rewritten around the placeholders. Texts longer than one slice are
 * worked through in slices with the event loop served in between.
 */

/** The identity of a value for placeholder reuse: the same email in another case is the same email. */
function canonical(type: EntityType, value: string): string {
  switch (type) {
    case 'EMAIL':
    case 'TERM':
      return value.toLowerCase()
    case 'CARD':
    case 'PHONE':
      return value.replace(/\D/g, '')
    case 'IBAN':
      return value.replace(/ /g, '').toUpperCase()
    default:
      return value
  }
}

/**
 * A value in memory of its own. A finding's value is a slice of the scrubbed text, and V8 may keep
 * a slice as a view of the whole text: a session holding one such view would keep every megabyte
 * of the text alive for its lifetime. Slicing a fresh concatenation copies the characters once.
 */
function ownCopy(value: string): string {
  return (value + ' ').slice(0, -1)
}

/** What a session costs beyond its values, and what each stored value costs besides its characters. */
const SESSION_BYTES = 512
const ENTRY_BYTES = 160

/** The values of a session, by type: the canonical form → placeholder number, and number → original. */
interface Store {
  readonly numbers: Map<EntityType, Map<string, number>>
  /** `originals.get(type)[n - 1]` is what `[TYPE_n]` stands for (first seen). */
  readonly originals: Map<EntityType, string[]>
}

interface Session extends Store {
  readonly id: string
  lastUsed: number
  bytes: number
  /** Distinct values held. */
  count: number
}

export interface ScrubResult {
  text: string
  session_id: string
  entities: { type: EntityType; placeholder: string; start: number; end: number }[]
}

/** An unknown, expired or evicted session: the caller starts a new one. */
export class SessionNotFound extends ApiError {
  constructor(id: string) {
    super('not_found', `unknown or expired session_id ${JSON.stringify(id.slice(0, 64))}`)
  }
}

export interface ScrubLimits {
  /** Distinct values one session may hold; more is refused (413 for a new session, 409 for an existing one). */
  readonly maxPlaceholdersPerSession: number
  /** Estimated memory all sessions may hold; past it the least recently used sessions are dropped. */
  readonly maxBytes: number
}

export const DEFAULT_SCRUB_LIMITS: ScrubLimits = {
  // Any 1 MB text fits: its densest findings are about 7 characters apart.
  maxPlaceholdersPerSession: 200_000,
  // Sessions outlive their requests: what they hold stays after a load. A session of a prompt's few
  // dozen values costs a few KiB, so this still holds the 10,000 sessions of the count cap, while
  // a flood of megabyte texts full of values keeps only the last few of them.
  maxBytes: 64 * 1024 * 1024,
}

const emptyStore = (): Store => ({ numbers: new Map(), originals: new Map() })

function ensure<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key)
  if (v === undefined) {
    v = make()
    map.set(key, v)
  }
  return v
}

/** One type's share of a plan: what the session knows, what the scrub adds, and the labels made so far. */
interface TypePlan {
  readonly known: ReadonlyMap<string, number> | undefined
  readonly fresh: Map<string, number>
  readonly originals: string[]
  /** Values of this type the session held before. */
  readonly before: number
  readonly labels: string[]
}

function typePlan(type: EntityType, session: Session | null, added: Store): TypePlan {
  const fresh = new Map<string, number>()
  const originals: string[] = []
  added.numbers.set(type, fresh)
  added.originals.set(type, originals)
  return {
    known: session?.numbers.get(type),
    fresh,
    originals,
    before: session?.originals.get(type)?.length ?? 0,
    labels: [],
  }
}

/** The placeholders a scrub uses: new values go to `added` (the new session itself, or what an existing one gains). */
interface Plan {
  readonly names: string[]
  readonly added: Store
  readonly count: number
  readonly bytes: number
}

/**
 * Scrub sessions, in memory only (originals never touch the disk). A session lives `ttlMs` after
 * its last use. Past `cap` live sessions, or past the memory budget, the least recently used
 * sessions are dropped (their ids then answer 404), so a flood of new sessions never refuses
 * service to the next caller; one session's size is capped and refused beyond.
 */
export class ScrubSessions {
  private readonly sessions = new Map<string, Session>()
  /** The scrub currently adding to each session (see planInto). */
  private readonly turns = new Map<string, Promise<unknown>>()
  private readonly limits: ScrubLimits
  private bytes = 0

  constructor(
    private readonly clock: Clock,
    private readonly terms: readonly string[] = [],
    private readonly ttlMs = 60 * 60 * 1000,
    private readonly cap = 10_000,
    limits: Partial<ScrubLimits> = {},
  ) {
    this.limits = { ...DEFAULT_SCRUB_LIMITS, ...limits }
  }

  async scrub(text: string, sessionId?: string): Promise<ScrubResult> {
    this.expire()
    if (sessionId !== undefined) this.touch(sessionId)
    const big = text.length > SLICE_CHARS
    const findings = await run(detectSliced(text, this.terms), big)
    const { session, plan } =
      sessionId === undefined ? await this.planNew(findings, big) : await this.planInto(sessionId, findings, big)
    const [out, entities] = await run(rewrite(text, findings, plan.names), big)
    return { text: out, session_id: session.id, entities }
  }

  /** Puts originals back wherever a placeholder appears, tolerating case and inner spaces an LLM may add. */
  async rehydrate(text: string, sessionId: string): Promise<{ text: string; replaced: number }> {
    this.expire()
    const session = this.touch(sessionId)
    return run(restore(text, session.originals), text.length > SLICE_CHARS)
  }

  get size(): number {
    return this.sessions.size
  }

  /** Estimated memory the live sessions hold (what the memory budget counts). */
  get heldBytes(): number {
    return this.bytes
  }

  /** A new session: nobody else can see it until it is stored. */
  private async planNew(findings: readonly Finding[], big: boolean): Promise<{ session: Session; plan: Plan }> {
    const plan = await run(this.plan(null, findings), big)
    const session = this.create(plan.added)
    this.commit(session, plan, false)
    return { session, plan }
  }

  /**
   * Adds to an existing session. Plans yield, so scrubs into one session take turns: each plans
   * against what the one before it stored.
   */
  private planInto(id: string, findings: readonly Finding[], big: boolean): Promise<{ session: Session; plan: Plan }> {
    const turn = (this.turns.get(id) ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        const session = this.touch(id)
        const plan = await run(this.plan(session, findings), big)
        // Evicted or expired while planning: storing into it would hand back an id that answers 404.
        if (this.sessions.get(id) !== session) throw new SessionNotFound(id)
        this.commit(session, plan, true)
        return { session, plan }
      })
    this.turns.set(id, turn)
    const clear = (): void => {
      if (this.turns.get(id) === turn) this.turns.delete(id)
    }
    turn.then(clear, clear)
    return turn
  }

  /** Assigns a placeholder to each finding; refuses, before storing anything, a session that would grow past its cap. */
  private *plan(session: Session | null, findings: readonly Finding[]): Work<Plan> {
    const added = emptyStore()
    const byType = new Map<EntityType, TypePlan>()
    const names: string[] = []
    let count = 0
    let bytes = 0
    for (const f of findings) {
      let t = byType.get(f.type)
      if (t === undefined) {
        t = typePlan(f.type, session, added)
        byType.set(f.type, t)
      }
      const value = canonical(f.type, f.value)
      let n = t.known?.get(value) ?? t.fresh.get(value)
      if (n === undefined) {
        t.originals.push(ownCopy(f.value))
        n = t.before + t.originals.length
        t.fresh.set(ownCopy(value), n)
        count++
        bytes += ENTRY_BYTES + 2 * (value.length + f.value.length)
      }
      names.push((t.labels[n] ??= `[${f.type}_${n}]`))
      if (names.length % SLICE_ITEMS === 0) yield
    }
    this.refuseOverCap(session, count, bytes)
    return { names, added, count, bytes }
  }

  private refuseOverCap(session: Session | null, count: number, bytes: number): void {
    const held = session?.count ?? 0
    const max = this.limits.maxPlaceholdersPerSession
    const tooMany = held + count > max
    const tooBig = (session?.bytes ?? SESSION_BYTES) + bytes > this.limits.maxBytes
    if (!tooMany && !tooBig) return
    if (session === null)
      throw new ApiError(
        'payload_too_large',
        tooMany
          ? `this text holds ${count} distinct values; one scrub session holds at most ${max}: split the text`
          : 'the values in this text need more memory than the scrub budget allows: split the text',
      )
    throw new ApiError(
      'conflict',
      `scrub session is full (${held} placeholders, at most ${max} and a bounded memory budget); start a new session by omitting session_id`,
    )
  }

  private commit(session: Session, plan: Plan, merge: boolean): void {
    if (merge) {
      for (const [type, fresh] of plan.added.numbers) {
        const numbers = ensure(session.numbers, type, () => new Map<string, number>())
        for (const [value, n] of fresh) numbers.set(value, n)
      }
      for (const [type, originals] of plan.added.originals) {
        const into = ensure(session.originals, type, (): string[] => [])
        for (const v of originals) into.push(v)
      }
    }
    session.count += plan.count
    session.bytes += plan.bytes
    this.bytes += plan.bytes
    this.evict(session.id)
  }

  /** A new session holding `store` (values are counted in by `commit`). */
  private create(store: Store): Session {
    const s: Session = { id: randomUUID(), ...store, lastUsed: this.clock.now(), bytes: SESSION_BYTES, count: 0 }
    this.sessions.set(s.id, s)
    this.bytes += s.bytes
    return s
  }

  private touch(id: string): Session {
    const s = this.sessions.get(id)
    if (!s) throw new SessionNotFound(id)
    s.lastUsed = this.clock.now()
    // Re-insert so Map order stays least-recently-used first.
    this.sessions.delete(id)
    this.sessions.set(id, s)
    return s
  }

  private drop(id: string): void {
    const s = this.sessions.get(id)
    if (!s) return
    this.sessions.delete(id)
    this.bytes -= s.bytes
  }

  /** Drops the least recently used sessions, never `keep`, until the count and memory caps hold. */
  private evict(keep: string): void {
    for (const id of this.sessions.keys()) {
      if (this.sessions.size <= this.cap && this.bytes <= this.limits.maxBytes) return
      if (id !== keep) this.drop(id)
    }
  }

  /** Drops the sessions unused for longer than the TTL (also called on a timer, so an idle daemon frees them too). */
  expire(): void {
    const now = this.clock.now()
    for (const [id, s] of this.sessions) {
      if (now - s.lastUsed <= this.ttlMs) break
      this.drop(id)
    }
  }
}

/** Work on a small text is done at once; on a larger one in slices, with the event loop served in between. */
function run<T>(work: Work<T>, big: boolean): Promise<T> {
  return big ? finishSliced(work) : Promise.resolve(drain(work))
}

/** The text with each finding replaced by its placeholder, and the list of what was replaced. */
function* rewrite(
  text: string,
  findings: readonly Finding[],
  names: readonly string[],
): Work<[string, ScrubResult['entities']]> {
  const entities: ScrubResult['entities'] = []
  let out = ''
  let at = 0
  for (let i = 0; i < findings.length; i++) {
    const f = findings[i]!
    out += text.slice(at, f.start) + names[i]!
    at = f.end
    entities.push({ type: f.type, placeholder: names[i]!, start: f.start, end: f.end })
    if (i % SLICE_ITEMS === SLICE_ITEMS - 1) yield
  }
  return [out + text.slice(at), entities]
}

/** A placeholder as an LLM may echo it: `[EMAIL_1]`, `[email_1]`, `[ EMAIL_1 ]`. */
const PLACEHOLDER = /\[\s{0,8}([A-Za-z]{1,16})_(\d{1,6})\s{0,8}\]/g

function* restore(
  text: string,
  originals: ReadonlyMap<EntityType, readonly string[]>,
): Work<{ text: string; replaced: number }> {
  const re = new RegExp(PLACEHOLDER.source, PLACEHOLDER.flags)
  const parts: string[] = []
  let at = 0
  let replaced = 0
  let mark = 0
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const original = originals.get(m[1]!.toUpperCase() as EntityType)?.[Number(m[2]) - 1]
    if (original !== undefined) {
      parts.push(text.slice(at, m.index), original)
      at = m.index + m[0].length
      replaced++
    }
    if (re.lastIndex - mark >= SLICE_CHARS) {
      mark = re.lastIndex
      yield
    }
  }
  parts.push(text.slice(at))
  return { text: parts.join(''), replaced }
}
