// Shared by the benches: a free loopback port, and a role of the bench script run as a child
// process that prints one JSON line when ready (so the load generator never shares its event loop).
import { spawn, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { startDaemon } from '../../../src-main/headless'

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = http.createServer()
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port
      s.close(() => resolve(p))
    })
  })
}

/**
 * Runs `script` with `args` under tsx in a child and resolves with the first JSON line it prints.
 * BENCH_CPU_PROF=<dir> writes a CPU profile of the child there.
 */
export function spawnChild(
  script: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ proc: ChildProcess; info: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
    const proc = spawn(process.execPath, [...prof, '--import', 'tsx', script, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    let out = ''
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      const nl = out.indexOf('\n')
      if (nl !== -1) resolve({ proc, info: JSON.parse(out.slice(0, nl)) as Record<string, unknown> })
    })
    proc.once('exit', (code) => reject(new Error(`child ${args.join(' ')} exited with ${code}`)))
  })
}

/**
 * The child role that runs the real daemon (core + HTTP server, configured from the environment
 * the parent passed), prints `{url}` once listening, and stops when the parent closes stdin.
 */
export async function runDaemonChild(): Promise<void> {
  const d = await startDaemon()
  process.stdout.write(JSON.stringify({ url: d.http.url }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => void d.stop().then(() => process.exit(0)))
}
