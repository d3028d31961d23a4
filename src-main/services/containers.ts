import { nodeNames, type Config } from '../config/load'
import type { NodeName } from '../contract/schemas'
import { shq } from '../ssh/quote'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'

/** A service's container as `docker inspect` showed it over SSH. */
export interface ContainerInfo {
  state: string
  started_at: string | null
  restart_count: number | null
  error: string | null
  /** The node did not answer over SSH (down, or no answer in time): nothing about the container is known. */
  unreachable?: boolean
}

/** Whether an SSH failure means the node itself cannot be reached (not a refused key or a failed command). */
export function nodeUnreachable(err: unknown): boolean {
  return err instanceof SshError && (err.kind === 'unreachable' || err.kind === 'timeout')
}

/** The node an SSH target is, by host, port and user (node2 first, the speech node); null when it is none. */
export function nodeNameOf(nodes: Config['nodes'], ssh: SshTarget | null): NodeName | null {
  if (!ssh) return null
  const same = (t: SshTarget | null | undefined): boolean =>
    t !== null && t !== undefined && t.host === ssh.host && t.port === ssh.port && t.user === ssh.user
  if (same(nodes.node2)) return 'node2'
  return nodeNames({ nodes }).find((name) => same(nodes[name])) ?? null
}

/** A container whose state could not be read, and why. */
export function unknownContainer(error: string): ContainerInfo {
  return { state: 'unknown', started_at: null, restart_count: null, error }
}

const MISSING: ContainerInfo = { state: 'missing', started_at: null, restart_count: null, error: null }

/** One container's fields as the inspect formats below print them (a zero start time is none). */
function inspected(state: string | undefined, startedAt: string | undefined, restarts: string | undefined) {
  return {
    state: state || 'unknown',
    started_at: startedAt && !startedAt.startsWith('0001-') ? startedAt : null,
    restart_count: restarts !== undefined && /^\d+$/.test(restarts) ? Number(restarts) : null,
    error: null,
  }
}

/** `docker inspect` of one container over SSH (6 s): running, exited, …, missing or unknown. */
export async function inspectContainer(
  pool: Pick<SshPool, 'exec'>,
  target: SshTarget,
  container: string,
): Promise<ContainerInfo> {
  try {
    const res = await pool.exec(
      target,
      `docker inspect -f '{{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}' ${shq(container)}`,
      { timeoutMs: PROBE_TIMEOUT_MS },
    )
    if (res.code !== 0) {
      if (/no such (object|container)/i.test(res.stderr)) return { ...MISSING }
      return unknownContainer(res.stderr.trim().slice(0, 300) || `exit ${res.code}`)
    }
    const [state, startedAt, restarts] = res.stdout.trim().split(/\s+/)
    return inspected(state, startedAt, restarts)
  } catch (err) {
    return { ...unknownContainer((err as Error).message), unreachable: nodeUnreachable(err) }
  }
}

/** `docker inspect` of several containers in one SSH call; a missing one is `missing`. */
export async function inspectContainers(
  pool: Pick<SshPool, 'exec'>,
  ssh: SshTarget,
  containers: string[],
): Promise<Map<string, ContainerInfo>> {
  const out = new Map<string, ContainerInfo>()
  const fmt = `{{.Name}} {{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}`
  try {
    const res = await pool.exec(ssh, `docker inspect -f ${shq(fmt)} ${containers.map(shq).join(' ')}`, {
      timeoutMs: PROBE_TIMEOUT_MS,
    })
    for (const line of res.stdout.split('\n')) {
      const [name, state, startedAt, restarts] = line.trim().split(/\s+/)
      if (!name || !state) continue
      out.set(name.replace(/^\//, ''), inspected(state, startedAt, restarts))
    }
    for (const c of containers)
      if (!out.has(c))
        out.set(
          c,
          /no such (object|container)/i.test(res.stderr)
            ? { ...MISSING }
            : unknownContainer(res.stderr.trim().slice(0, 300) || `exit ${res.code}`),
        )
  } catch (err) {
    for (const c of containers)
      out.set(c, { ...unknownContainer((err as Error).message), unreachable: nodeUnreachable(err) })
  }
  return out
}
