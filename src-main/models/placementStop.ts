import type { NodeName } from '../contract/schemas'
import { shq } from '../ssh/quote'
import { containerTail } from './engineLoad'
import type { PlacementBook } from './placementBook'

/** One `docker stop` on a node whose container the launcher's stop on the head did not reach. */
const NODE_STOP_TIMEOUT_MS = 60_000

/** A node where a stop could not be verified, and why. */
export interface UnverifiedStop {
  readonly node: NodeName
  readonly why: string
}

/**
 * Whether the llm container is running on a node: true, false (gone or exited), or null when the
 * node could not be asked (unreachable at the last probe, or the command failed).
 */
export async function containerRunning(book: PlacementBook, node: NodeName): Promise<boolean | null> {
  const target = book.deps.targetOf(node)
  if (target === null || book.unreachable.has(node)) return null
  const t = await containerTail(book.deps.pool, {
    baseUrl: null,
    head: target,
    container: book.deps.config.llm.container,
  })
  return t.running
}

/**
 * A placement reads stopped only once its container is verified gone on every one of its nodes
 * (docs/placements.md, Truthful stop): a container still running on a node is stopped there; a
 * node that cannot be asked is returned, so the stop is retried when it answers.
 */
export async function verifyStopped(book: PlacementBook, nodes: readonly NodeName[]): Promise<UnverifiedStop[]> {
  const left: UnverifiedStop[] = []
  for (const node of nodes) {
    let running = await containerRunning(book, node)
    const target = book.deps.targetOf(node)
    if (running === true && target !== null) {
      const stop = `docker stop ${shq(book.deps.config.llm.container)}`
      await book.deps.pool.exec(target, stop, { timeoutMs: NODE_STOP_TIMEOUT_MS }).catch(() => null)
      running = await containerRunning(book, node)
    }
    if (running === null) left.push({ node, why: `${node} could not be reached` })
    else if (running) left.push({ node, why: `the container still runs on ${node}` })
  }
  return left
}

/** `node2 could not be reached; the container still runs on node3`: the reasons in one line. */
export function unverifiedText(left: readonly UnverifiedStop[]): string {
  return left.map((l) => l.why).join('; ')
}
