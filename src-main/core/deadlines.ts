/**
 * Deadlines for many short-lived owners at once: every relayed request has one while its body
 * arrives and another while its upstream call runs, and almost all of them end unfired. A
 * `setTimeout` each would allocate a timer, an async resource and a place in Node's timer heap per
 * request. Here a deadline is one small node in a list, and the list is already in due order,
 * because every deadline in it is the same `ms` after it was started and each joins at the tail.
 * One timer stands for a whole list: the head's. Cancelling the head leaves that timer armed; when
 * it fires, it expires what is due and arms again for whatever is first then.
 */
export class Deadlines<T> {
  /** One list per deadline length (a handful: they come from settings). */
  private readonly lists = new Map<number, DeadlineList<T>>()

  constructor(
    /** Called once for each deadline that passes, after it has left its list. */
    private readonly expire: (owner: T, ms: number) => void,
    /** Monotonic milliseconds; injectable so tests move time by hand. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `owner`'s deadline, `ms` from now; `cancel` it when the work ends first. */
  start(owner: T, ms: number): Deadline<T> {
    let list = this.lists.get(ms)
    if (list === undefined) {
      list = new DeadlineList(this, ms)
      this.lists.set(ms, list)
    }
    return list.append(owner, this.now() + ms)
  }

  /** Deadlines not yet passed nor cancelled. */
  get pending(): number {
    let n = 0
    for (const list of this.lists.values()) n += list.size
    return n
  }

  /** @internal The list's timer fired. */
  fire(list: DeadlineList<T>): void {
    const now = this.now()
    for (let d = list.first; d !== null && d.dueAt <= now; d = list.first) {
      d.cancel()
      this.expire(d.owner, list.ms)
    }
    if (list.first !== null) list.arm(list.first.dueAt - now)
    // An empty list goes, so lengths no longer in use do not pile up.
    else if (this.lists.get(list.ms) === list) this.lists.delete(list.ms)
  }
}

/** One owner's deadline: a node of its list until it passes or is cancelled. */
export class Deadline<T> {
  prev: Deadline<T> | null = null
  next: Deadline<T> | null = null
  linked = true

  constructor(
    private readonly list: DeadlineList<T>,
    readonly owner: T,
    readonly dueAt: number,
  ) {}

  /** Ends the deadline without it passing; nothing happens when it already ended. */
  cancel(): void {
    if (this.linked) this.list.unlink(this)
  }
}

class DeadlineList<T> {
  first: Deadline<T> | null = null
  private last: Deadline<T> | null = null
  size = 0
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly owner: Deadlines<T>,
    readonly ms: number,
  ) {}

  append(owner: T, dueAt: number): Deadline<T> {
    const d = new Deadline(this, owner, dueAt)
    if (this.last === null) this.first = d
    else {
      this.last.next = d
      d.prev = this.last
    }
    this.last = d
    this.size++
    if (this.timer === null) this.arm(this.ms)
    return d
  }

  unlink(d: Deadline<T>): void {
    d.linked = false
    if (d.prev === null) this.first = d.next
    else d.prev.next = d.next
    if (d.next === null) this.last = d.prev
    else d.next.prev = d.prev
    d.prev = d.next = null
    this.size--
  }

  arm(inMs: number): void {
    // One timer per list, even when an expiry started a deadline in this list while it fired.
    if (this.timer !== null) clearTimeout(this.timer)
    // Node's timers count from the loop's cached time, which can lag: a timer may fire a little
    // before the head is due by this clock, and then simply arms again for the rest.
    this.timer = setTimeout(fireList, Math.max(1, Math.ceil(inMs)), this)
    // A pending deadline does not keep the process alive on its own.
    this.timer.unref()
  }

  fired(): void {
    this.timer = null
    this.owner.fire(this)
  }
}

function fireList<T>(list: DeadlineList<T>): void {
  list.fired()
}
