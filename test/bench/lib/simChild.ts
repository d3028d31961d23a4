// Shared by the benches that measure against the simulated cluster in a child process: the child
// prints how to reach its two nodes, the parent reads that back as SSH targets.
import type { SimCluster } from '../../sim/cluster'

/** The child's role: prints its nodes' SSH ports, node2's address and the user, then runs until the parent closes stdin. */
export function serveSimToParent(sim: SimCluster): void {
  process.stdout.write(
    JSON.stringify({
      node1: sim.node1.port,
      node2: sim.node2.port,
      node2Host: sim.node2.address,
      user: sim.node1.user,
    }) + '\n',
  )
  process.stdin.resume()
  process.stdin.on('end', () => void sim.close().then(() => process.exit(0)))
}

/** The parent's SSH targets of node1 and node2, from the line `serveSimToParent` printed. */
export function simTargets(info: Record<string, unknown>) {
  return {
    node1: { host: '127.0.0.1', user: String(info.user), port: Number(info.node1) },
    node2: { host: String(info.node2Host), user: String(info.user), port: Number(info.node2) },
  }
}
