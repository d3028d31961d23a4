// Shared by the benches: a free loopback port, and a role of the bench script run as a child
// process that prints one JSON line when ready (so the load generator never shares its event loop).
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'
import { startDaemon } from '../../../src-main/headless'
import { freePort } from '../../helpers/builtDaemon'

export { freePort }

/** The daemon's environment for a bench, on loopback in front of the fake upstreams. */
export async function benchDaemonEnv(
  llmPort: number,
  asrPort: number,
  dataDir: string,
): Promise<NodeJS.ProcessEnv & { PORT: string }> {
  return {
    PORT: String(await freePort()),
    BIND: '127.0.0.1',
    DATA_DIR: dataDir,
    NODE1_HOST: '127.0.0.1',
    NODE1_USER: 'bench',
    NODE2_HOST: '127.0.0.1',
    NODE2_USER: 'bench',
    LLM_PORT: String(llmPort),
    ASR_PORT: String(asrPort),
    RATE_SOURCES: 'http://127.0.0.1:9',
    LOG_LEVEL: 'warn',
  }
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
  return spawnNode(['--import', 'tsx', script, ...args], opts)
}

/**
 * How a child's node is started when not plainly: under a tool (`prefix`, such as valgrind and its
 * options) and with extra node flags.
 */
export interface Launcher {
  readonly prefix: readonly string[]
  readonly nodeFlags: readonly string[]
}

/** The command and arguments that start node with `argv`, under `launcher` when given. */
function nodeCommand(argv: readonly string[], launcher?: Launcher): [string, string[]] {
  const node = [process.execPath, ...(launcher?.nodeFlags ?? []), ...argv]
  return launcher && launcher.prefix.length > 0
    ? [launcher.prefix[0]!, [...launcher.prefix.slice(1), ...node]]
    : [node[0]!, node.slice(1)]
}

/** Runs node with `argv` and resolves with the first JSON line the child prints. */
function spawnNode(
  argv: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; launcher?: Launcher },
): Promise<{ proc: ChildProcess; info: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
    const [command, args] = nodeCommand([...prof, ...argv], opts.launcher)
    const proc = spawn(command, args, {
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
    proc.once('exit', (code) => reject(new Error(`child ${argv.join(' ')} exited with ${code}`)))
  })
}

/**
 * Calls `run` (an export of `module`) in a child running plain JavaScript: the module, and the
 * project's modules it imports by relative path, are transpiled to `out/bench/` first (each must
 * import only Node, npm and such modules). Code run under tsx pays for tsx's function-naming shim on
 * every closure it creates, which built code does not.
 */
export function spawnTranspiled(
  root: string,
  module: string,
  run: string,
  env: NodeJS.ProcessEnv,
  launcher?: Launcher,
): Promise<{ proc: ChildProcess; info: Record<string, unknown> }> {
  const out = transpileToBench(root, module)
  const entry = `import { ${run} } from ${JSON.stringify(pathToFileURL(out).href)}; await ${run}()`
  return spawnNode(['--input-type=module', '-e', entry], { cwd: root, env, launcher })
}

/** `module` as `out/bench/<name>.mjs`, with its relative imports of `.ts` modules transpiled beside it; returns its path. */
function transpileToBench(root: string, module: string, done = new Map<string, string>()): string {
  const known = done.get(module)
  if (known !== undefined) return known
  const out = path.join(root, 'out', 'bench', `${path.basename(module, '.ts')}.mjs`)
  done.set(module, out)
  const js = ts
    .transpileModule(fs.readFileSync(module, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, preserveConstEnums: true },
    })
    .outputText.replace(/(from\s+)(['"])(\.{1,2}\/[^'"]+)\2/g, (whole, from: string, _q: string, spec: string) => {
      const source = path.resolve(path.dirname(module), `${spec}.ts`)
      if (!fs.existsSync(source)) return whole
      return `${from}${JSON.stringify(`./${path.basename(transpileToBench(root, source, done))}`)}`
    })
  fs.mkdirSync(path.dirname(out), { recursive: true })
  fs.writeFileSync(out, js)
  return out
}

/**
 * The built daemon (`out/main/index.js --headless`: what `npm start` and the app's main process
 * run) as a child configured by `env`, which must set PORT; resolves once `/api/health` answers
 * (within `readyS` seconds). Stop it with SIGTERM.
 */
export async function spawnBuiltDaemon(
  root: string,
  env: NodeJS.ProcessEnv & { PORT: string },
  opts: { launcher?: Launcher; readyS?: number } = {},
): Promise<{ proc: ChildProcess; info: { url: string } }> {
  const bundle = path.join(root, 'out', 'main', 'index.js')
  if (!fs.existsSync(bundle)) throw new Error('the daemon is not built: run npm run build first')
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
  // BENCH_DAEMON_FLAGS: node flags for the daemon alone (e.g. a --require of a timing preload).
  const flags = (process.env.BENCH_DAEMON_FLAGS ?? '').split(' ').filter((f) => f !== '')
  const [command, args] = nodeCommand([...prof, ...flags, bundle, '--headless'], opts.launcher)
  const readyS = opts.readyS ?? 30
  const proc = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${env.PORT}`
  let exited = false
  proc.once('exit', () => (exited = true))
  for (let tries = 0; tries < readyS * 10; tries++) {
    if (exited) throw new Error('the built daemon exited before it was ready')
    const ready = await fetch(`${url}/api/health`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) return { proc, info: { url } }
    await new Promise((r) => setTimeout(r, 100))
  }
  proc.kill('SIGTERM')
  throw new Error(`the built daemon did not answer /api/health within ${readyS} s`)
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

/** A bench's child role: the fake asr on loopback, its port printed; it stops when stdin ends. */
export async function runFakeAsrChild(): Promise<void> {
  const { startFakeAsr } = await import('../../sim/http/index')
  const asr = await startFakeAsr()
  process.stdout.write(JSON.stringify({ port: asr.port }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => void asr.close().then(() => process.exit(0)))
}
