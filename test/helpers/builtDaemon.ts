import type { ChildProcess } from 'node:child_process'
import net from 'node:net'

/**
 * A free loopback port, for a child that needs one named (the daemon's PORT must be 1–65535; 0
 * falls back to 9999, which two such tests running at once would share).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

/** The address a spawned headless daemon prints once it listens; rejects, with its output, if it exits first. */
export function waitForListening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = ''
    child.stderr?.on('data', (b: Buffer) => {
      seen += b.toString()
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(seen)
      if (m?.[1]) resolve(m[1])
    })
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code}: ${seen.slice(-2000)}`)))
  })
}

/**
 * The environment of a spawned headless daemon (the built bundle) on a free loopback port: its own
 * DATA_DIR (and HOME), the admin token given, monitoring off; `extra` adds the test's own
 * (the nodes, the engines' ports).
 */
export async function builtDaemonEnv(
  dataDir: string,
  adminToken: string,
  extra: Record<string, string> = {},
): Promise<NodeJS.ProcessEnv> {
  return {
    ...extra,
    PATH: process.env.PATH ?? '',
    HOME: dataDir,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    BIND: '127.0.0.1',
    ADMIN_TOKEN: adminToken,
    MONITOR_INTERVAL_S: '0',
  }
}
