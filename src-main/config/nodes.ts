import type { SshTarget } from './load'
import { MAX_EXTRA_NODES } from './settingSpecs'
import { hostLike, port, userLike } from './settingValidators'

/**
 * Every configured node's SSH target by name: node1 and node2 always (null when not configured),
 * then node3… from NODES (null where its entry was malformed, so the names after it keep their place).
 */
export interface NodeTargets {
  readonly node1: SshTarget | null
  readonly node2: SshTarget | null
  readonly [name: string]: SshTarget | null | undefined
}

export interface ExtraNodes {
  /** node3, node4, … in the list's order. */
  readonly targets: Readonly<Record<string, SshTarget | null>>
  /** One line per skipped entry, naming the node it would have been. */
  readonly problems: readonly string[]
}

/** `user@host`, `user@host:port`, `user@[v6]` or `user@[v6]:port`. */
const ENTRY = /^([^@\s]*)@(?:\[([^\]]*)\]|([^:[\]]*))(?::([^:]*))?$/

/**
 * NODES, entry by entry: each becomes node3, node4, … by its position. A malformed entry, or one
 * on the same host and port as a node before it, is reported and left null, so a typo never
 * shifts the names (and the placements) of the nodes after it.
 */
export function parseExtraNodes(value: string, before: readonly SshTarget[]): ExtraNodes {
  const entries = value.trim() === '' ? [] : value.split(',').map((e) => e.trim())
  const seen = [...before]
  const targets: Record<string, SshTarget | null> = {}
  const problems: string[] = []
  entries.slice(0, MAX_EXTRA_NODES).forEach((entry, i) => {
    const name = `node${i + 3}`
    const parsed = parseEntry(entry)
    const again = typeof parsed !== 'string' && seen.some((t) => t.host === parsed.host && t.port === parsed.port)
    if (typeof parsed !== 'string' && !again) {
      seen.push(parsed)
      targets[name] = parsed
      return
    }
    const problem = typeof parsed === 'string' ? parsed : 'the same host and port as a node before it'
    problems.push(`entry ${i + 1} (${name}, ${JSON.stringify(entry.slice(0, 100))}) skipped: ${problem}`)
    targets[name] = null
  })
  return { targets, problems }
}

/** One entry as an SSH target, or what is wrong with it. */
function parseEntry(entry: string): SshTarget | string {
  const m = ENTRY.exec(entry)
  if (!m) return 'must be user@host or user@host:port (an IPv6 address in brackets)'
  const [, user = '', v6, plain, portText] = m
  const host = v6 ?? plain ?? ''
  if (user === '' || !userLike.safeParse(user).success)
    return 'the user must be a user name (lower-case letters, digits, _ . -; up to 32)'
  if (host === '' || host.length > 253 || !hostLike.safeParse(host).success)
    return 'the host must be a host name or address (letters, digits, dots, dashes and colons)'
  if (portText === undefined) return { user, host, port: 22 }
  const p = port.safeParse(portText)
  return p.success ? { user, host, port: p.data } : 'the port must be a whole number between 1 and 65535'
}

/** Every configured node's name: node1, node2, then the ones from NODES in their order. */
export function nodeNames(config: { readonly nodes: Readonly<Record<string, unknown>> }): string[] {
  const order = (name: string): number => Number(name.slice(4))
  return Object.keys(config.nodes).sort((a, b) => order(a) - order(b))
}
