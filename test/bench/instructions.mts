// Instructions per relayed request, counted by valgrind's callgrind instead of timed: on a machine
// shared with other tenants the same build's CPU per request moves by a third between runs, while
// the instructions it retires move by about 2 % once the JIT's compiling and the garbage collector
// are counted apart (docs/gateway-profile.md, eighth pass). Needs valgrind (Debian: apt-get install
// valgrind); without it, it says so and stops.
//
//   npx tsx test/bench/instructions.mts [tandem|floor] [requests]   (build first: npm run build)
//   (floor: Node's HTTP server and undici's Pool, nothing else; see gateway.mts)
//
// The proxy runs under callgrind with V8 on one thread (its compiler and collector then run on the
// main thread, where they are counted) and with a perf map, so the JIT's code has names. It is
// warmed up first, counted over `requests` non-stream chat requests from 16 keep-alive clients, and
// the counts are printed per request: in all, the JIT's compiling, the garbage collector, the rest
// (steady), and the functions that retire the most of the rest.
import { execFileSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchDaemonEnv, spawnBuiltDaemon, spawnChild, spawnTranspiled, type Launcher } from './lib/child'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '../..')
const GATEWAY = path.join(path.dirname(SELF), 'gateway.mts')
const CLIENTS = 16
const WARM_UP = 6000
/**
 * Connection sets the warm-up is spread over. Closing a set deoptimises Node's stream and socket
 * code until V8 has seen every shape a close brings (three or four sets); warmed up over one set,
 * the counted window held the JIT recompiling that code (80k a request) and much of it run as
 * baseline code, which no server that has run a while does.
 */
const WARM_UP_SETS = 6

/** Sends `total` non-stream chat requests from `clients` keep-alive clients; rejects on any answer but 200. */
async function chatLoad(base: string, clients: number, total: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const body = JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages: [{ role: 'user', content: 'hello bench' }] })
  let started = 0
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        `${base}/v1/chat/completions`,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume()
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))))
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (started < total) {
        started++
        await one()
      }
    }),
  )
  agent.destroy()
}

/** A perf map's JIT code ranges, to name the addresses callgrind reports as `???:0x…`. */
function perfMap(file: string): { starts: number[]; ends: number[]; names: string[] } {
  const rows = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ start: parseInt(m[1]!, 16), size: parseInt(m[2]!, 16), name: m[3]! }))
    .sort((a, b) => a.start - b.start)
  return { starts: rows.map((r) => r.start), ends: rows.map((r) => r.start + r.size), names: rows.map((r) => r.name) }
}

function nameAt(map: ReturnType<typeof perfMap>, address: number): string | null {
  let lo = 0
  let hi = map.starts.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (map.starts[mid]! <= address) lo = mid + 1
    else hi = mid - 1
  }
  return hi >= 0 && address < map.ends[hi]! ? map.names[hi]! : null
}

const COMPILING = /compiler::|Turbofan|[Mm]aglev|Compile/
const COLLECTING =
  /Scaveng|heap::|Heap::|NewSpace|Pretenuring|SizeFromMap|Evacuat|Marking|MarkCompact|Sweep|IteratePointers|BodyDescriptor|RememberedSet|SlotSet/

async function main(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
  } catch {
    console.log('instructions: valgrind is not installed; nothing counted')
    return
  }
  const which = process.argv[2] === 'floor' ? 'floor' : 'tandem'
  const requests = Number(process.argv[3] ?? 3000)
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-callgrind-'))
  const launcher: Launcher = {
    prefix: [
      'valgrind',
      '--quiet',
      '--tool=callgrind',
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${path.join(out, 'callgrind.out')}`,
    ],
    nodeFlags: ['--single-threaded', '--perf-basic-prof'],
  }
  const up = await spawnChild(GATEWAY, ['--role=upstream'], { cwd: ROOT })
  const llmPort = up.info.llm as number
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-callgrind-data-'))
  let proxy: { proc: ChildProcess; info: Record<string, unknown> } | null = null
  try {
    proxy =
      which !== 'tandem'
        ? await spawnTranspiled(
            ROOT,
            path.join(path.dirname(SELF), 'lib', 'bareProxy.ts'),
            'runBareProxyRole',
            { BENCH_UPSTREAM_PORT: String(llmPort) },
            launcher,
          )
        : await spawnBuiltDaemon(ROOT, await benchDaemonEnv(llmPort, up.info.asr as number, dataDir), {
            launcher,
            readyS: 300,
          })
    const pid = String(proxy.proc.pid)
    const url = proxy.info.url as string
    for (let set = 0; set < WARM_UP_SETS; set++) await chatLoad(url, CLIENTS, WARM_UP / WARM_UP_SETS)
    execFileSync('callgrind_control', ['--instr=on', pid], { stdio: 'ignore' })
    await chatLoad(url, CLIENTS, requests)
    execFileSync('callgrind_control', ['--dump', pid], { stdio: 'ignore' })
    const dump = fs
      .readdirSync(out)
      .filter((f) => f.startsWith('callgrind.out'))
      .map((f) => path.join(out, f))
      .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]
    if (dump === undefined) throw new Error('callgrind wrote no counts')
    const annotated = execFileSync('callgrind_annotate', ['--threshold=100', dump], { maxBuffer: 1 << 28 }).toString()
    const map = perfMap(`/tmp/perf-${pid}.map`)
    const byName = new Map<string, number>()
    let total = 0
    let compiling = 0
    let collecting = 0
    for (const line of annotated.split('\n')) {
      const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line)
      if (m === null || m[2]!.includes('PROGRAM TOTALS')) continue
      const count = Number(m[1]!.replace(/,/g, ''))
      const jit = /^\?\?\?:0x([0-9a-f]+)/.exec(m[2]!)
      const name = jit
        ? (nameAt(map, parseInt(jit[1]!, 16)) ?? 'JIT code without a name')
        : m[2]!.replace(/ \[[^\]]*\]$/, '')
      total += count
      if (COMPILING.test(name)) compiling += count
      else if (COLLECTING.test(name)) collecting += count
      else byName.set(name, (byName.get(name) ?? 0) + count)
    }
    const k = (n: number): string => `${(n / requests / 1000).toFixed(1)}k`
    console.log(
      `${which}: ${requests} requests from ${CLIENTS} clients after ${WARM_UP} to warm up over ${WARM_UP_SETS} sets of connections; per request:`,
    )
    console.log(
      `  in all ${k(total)} instructions; the JIT compiling ${k(compiling)}; the garbage collector ${k(collecting)}; ` +
        `steady ${k(total - compiling - collecting)}`,
    )
    for (const [name, n] of [...byName].sort((a, b) => b[1] - a[1]).slice(0, 25))
      console.log(`  ${String(Math.round(n / requests)).padStart(7)}  ${name.slice(0, 120)}`)
  } finally {
    proxy?.proc.kill('SIGKILL')
    up.proc.kill('SIGTERM')
    if (proxy?.proc.pid !== undefined) fs.rmSync(`/tmp/perf-${proxy.proc.pid}.map`, { force: true })
    fs.rmSync(out, { recursive: true, force: true })
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
