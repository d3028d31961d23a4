// Simulated docker CLI. Containers live as JSON files under $SIM_STATE/docker so state survives
// between commands; running GPU users are mirrored into $SIM_STATE/gpu-procs for nvidia-smi, and
// every state change is appended to $SIM_STATE/docker/events.log for the sim to observe. Images
// are listed in $SIM_STATE/docker/images.json: only those can run; a missing one is pulled when
// its reference names a namespace or registry (`eugr/spark-vllm`, `nvcr.io/…`), while a bare local
// name (`vllm-node`) exists only once built, tagged or loaded, as with real docker.
//
// Commands run "inside" a container (`docker exec`, a non-detached `docker run`) execute on the
// node with the container's view passed along: SIM_ROOTFS (its private files,
// $SIM_STATE/docker/rootfs/<name>), SIM_BINDS (its bind mounts, host paths resolved), SIM_CONTAINER,
// SIM_IMAGE; a vLLM image adds the stand-in vllm package and its `vllm` command
// (test/sim/container). `/proc/1/fd/1` in a command is the container's log.
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { containerFileCommand } from './containerFiles.mjs'

const STATE = process.env.SIM_STATE
const DIR = path.join(STATE, 'docker')
const CDIR = path.join(DIR, 'containers')
const IMAGES = path.join(DIR, 'images.json')
const CONTAINER_SIDE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'container')
fs.mkdirSync(CDIR, { recursive: true })
fs.mkdirSync(path.join(STATE, 'gpu-procs'), { recursive: true })

const out = (s) => process.stdout.write(s + '\n')
const err = (s) => process.stderr.write(s + '\n')
const die = (msg, code = 1) => {
  err(msg)
  process.exit(code)
}
/** `docker run`'s way of reporting an error: "docker: <message>." and the help hint, exit 125. */
const runDie = (msg, code = 125) => die(`docker: ${msg.replace(/\.$/, '')}.\nSee 'docker run --help'.`, code)
const readJson = (f, d) => {
  try {
    return JSON.parse(fs.readFileSync(f, 'utf8'))
  } catch {
    return d
  }
}
const sha = (s) => crypto.createHash('sha256').update(s).digest('hex')
const sleepMs = (ms) => {
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}
const flag = (name) => fs.existsSync(path.join(STATE, name))
const nowIso = () => new Date().toISOString()
const event = (name, what) => fs.appendFileSync(path.join(DIR, 'events.log'), `${Date.now()} ${name} ${what}\n`)

// ---- images ----

/** A reference as docker shows it: no docker.io/ or library/ prefix, `:latest` when untagged. */
function normRef(ref) {
  let r = ref.replace(/^docker\.io\//, '').replace(/^library\//, '')
  const last = r.slice(r.lastIndexOf('/') + 1)
  if (!r.includes('@') && !last.includes(':')) r += ':latest'
  return r
}
/** The repository part of a reference (what "pull access denied for …" names). */
const repoOf = (ref) =>
  normRef(ref)
    .replace(/@.*$/, '')
    .replace(/:[^/:]*$/, '')
/** Where a pull goes: the registry host, or Docker Hub. */
const registryOf = (ref) => {
  const first = normRef(ref).split('/')[0]
  return normRef(ref).includes('/') && /[.:]|^localhost$/.test(first) ? first : 'registry-1.docker.io'
}
/** The fully qualified reference docker pull prints last. */
const qualified = (ref) => {
  const n = normRef(ref)
  if (registryOf(ref) !== 'registry-1.docker.io') return n
  return `docker.io/${n.includes('/') ? n : `library/${n}`}`
}
/** The registry has it: a namespaced or registry reference, unless listed in docker/unpullable. */
function pullable(ref) {
  const n = normRef(ref)
  if (!repoOf(n).includes('/')) return false
  const missing = fs.existsSync(path.join(DIR, 'unpullable'))
    ? fs
        .readFileSync(path.join(DIR, 'unpullable'), 'utf8')
        .split('\n')
        .map((l) => l.trim())
    : []
  return !missing.some((m) => m !== '' && (normRef(m) === n || m === repoOf(n)))
}
const deniedMessage = (ref) =>
  `Error response from daemon: pull access denied for ${repoOf(ref)}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`

function images() {
  return readJson(IMAGES, []).map((i) =>
    typeof i === 'string'
      ? { ref: normRef(i), id: `sha256:${sha(normRef(i))}`, created: '2026-01-01T00:00:00Z', size: 18_200_000_000 }
      : i,
  )
}
const saveImages = (list) => fs.writeFileSync(IMAGES, JSON.stringify(list, null, 1))
/** An image by reference or by (a prefix of at least 12 digits of) its ID. */
function findImage(ref) {
  const list = images()
  const n = normRef(ref)
  const byRef = list.find((i) => i.ref === n)
  if (byRef) return byRef
  const hex = ref.replace(/^sha256:/, '')
  return /^[0-9a-f]{12,64}$/.test(hex) ? (list.find((i) => i.id.slice(7).startsWith(hex)) ?? null) : null
}
function addImage(ref, id = null, size = 18_200_000_000) {
  const n = normRef(ref)
  const list = images().filter((i) => i.ref !== n)
  list.push({ ref: n, id: id ?? `sha256:${sha(`${n}#${Date.now()}`)}`, created: nowIso(), size })
  saveImages(list)
}
function imageView(img) {
  const tags = images()
    .filter((i) => i.id === img.id)
    .map((i) => i.ref)
  return {
    Id: img.id,
    RepoTags: tags,
    RepoDigests: tags.filter((t) => t.includes('/')).map((t) => `${repoOf(t)}@sha256:${sha(`${t}#digest`)}`),
    Parent: '',
    Comment: 'buildkit.dockerfile.v0',
    Created: img.created,
    DockerVersion: '',
    Author: '',
    Config: {
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      Cmd: null,
      Entrypoint: null,
      WorkingDir: '/workspace',
      Labels: null,
    },
    Architecture: 'arm64',
    Os: 'linux',
    Size: img.size,
    RootFS: { Type: 'layers', Layers: [0, 1, 2, 3].map((k) => `sha256:${sha(`${img.id}#layer${k}`)}`) },
    Metadata: { LastTagTime: img.created },
  }
}

// ---- containers ----

const cfile = (name) => path.join(CDIR, `${name}.json`)
const load = (name) => {
  const byName = readJson(cfile(name.replace(/^\//, '')), null)
  if (byName) return byName
  for (const f of fs.readdirSync(CDIR)) {
    const c = readJson(path.join(CDIR, f), null)
    if (c && name.length >= 4 && c.Id.startsWith(name)) return c
  }
  return null
}
const all = () =>
  fs
    .readdirSync(CDIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => readJson(path.join(CDIR, f), null))
    .filter(Boolean)

function save(c) {
  fs.writeFileSync(cfile(c.Name.slice(1)), JSON.stringify(c, null, 2))
  const gp = path.join(STATE, 'gpu-procs', c.Name.slice(1))
  if (c.State.Running && c.GpuMiB > 0) fs.writeFileSync(gp, `${c.State.Pid},${c.GpuProcess},${c.GpuMiB}`)
  else fs.rmSync(gp, { force: true })
}

/** Removes a container with its log and files; the sim's note of what it served goes too. */
function removeContainer(c) {
  const name = c.Name.slice(1)
  if (c.State.Running) setRunning(c, false, 137, { keep: true })
  fs.rmSync(cfile(name), { force: true })
  fs.rmSync(path.join(DIR, 'logs', `${name}.log`), { force: true })
  fs.rmSync(path.join(DIR, 'rootfs', name), { recursive: true, force: true })
  event(name, 'removed')
}

function setRunning(c, running, exitCode = 0, opts = {}) {
  c.State.Running = running
  c.State.Status = running ? 'running' : 'exited'
  c.State.Pid = running ? 10000 + Math.floor(Math.random() * 50000) : 0
  c.State.ExitCode = running ? 0 : exitCode
  if (running) c.State.StartedAt = nowIso()
  else c.State.FinishedAt = nowIso()
  save(c)
  event(c.Name.slice(1), c.State.Status)
  appendLog(c, running ? 'container started' : 'container stopped')
  if (!running) {
    // Whatever the engine in it served is gone with it.
    const owner = path.join(STATE, 'llm-serving.owner')
    if (fs.existsSync(owner) && fs.readFileSync(owner, 'utf8').trim() === c.Name.slice(1)) {
      fs.rmSync(path.join(STATE, 'llm-serving'), { force: true })
      fs.rmSync(owner, { force: true })
    }
    // Started with --rm: docker removes it once it stops (not on a restart).
    if (c.HostConfig.AutoRemove && !opts.keep) removeContainer(c)
  }
}

function appendLog(c, line) {
  const f = path.join(DIR, 'logs', `${c.Name.slice(1)}.log`)
  fs.mkdirSync(path.dirname(f), { recursive: true })
  fs.appendFileSync(f, `${nowIso()} ${line}\n`)
}

function ago(iso) {
  const s = Math.max(1, Math.round((Date.now() - Date.parse(iso)) / 1000))
  if (s < 60) return `${s} seconds`
  if (s < 3600) return `${Math.round(s / 60)} minutes`
  if (s < 86400) return `${Math.round(s / 3600)} hours`
  return `${Math.round(s / 86400)} days`
}
const statusText = (c) =>
  c.State.Running
    ? `Up ${ago(c.State.StartedAt)}`
    : c.State.Status === 'created'
      ? 'Created'
      : `Exited (${c.State.ExitCode}) ${ago(c.State.FinishedAt)} ago`
const portsText = (c) =>
  Object.entries(c.HostConfig.PortBindings ?? {})
    .map(([cp, b]) => `0.0.0.0:${b[0].HostPort}->${cp}`)
    .join(', ')

// A small Go-template evaluator: {{.A.B}}, {{json .A}}, {{.Names}} etc.
function render(tpl, obj) {
  tpl = tpl.replace(/\\t/g, '\t').replace(/\\n/g, '\n')
  return tpl.replace(/\{\{\s*(json\s+)?(\.[A-Za-z0-9_.]*)\s*\}\}/g, (_m, json, p) => {
    let v = obj
    for (const k of p.split('.').filter(Boolean)) v = v == null ? undefined : v[k]
    if (json) return JSON.stringify(v ?? null)
    if (v === undefined || v === null) return '<no value>'
    if (typeof v === 'object')
      return Array.isArray(v)
        ? `[${v.join(' ')}]`
        : `map[${Object.entries(v)
            .map(([k, x]) => `${k}:${JSON.stringify(x)}`)
            .join(' ')}]`
    return String(v)
  })
}

function psView(c) {
  return {
    ID: c.Id.slice(0, 12),
    Image: c.Config.Image,
    Command: JSON.stringify((c.Config.Cmd ?? []).join(' ')).slice(0, 22),
    CreatedAt: c.Created,
    RunningFor: `${ago(c.Created)} ago`,
    Status: statusText(c),
    State: c.State.Status,
    Ports: portsText(c),
    Names: c.Name.slice(1),
  }
}

function takeFlag(args, names, hasValue) {
  const vals = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    for (const n of names) {
      if (a === n) {
        vals.push(hasValue ? args[i + 1] : true)
        args.splice(i, hasValue ? 2 : 1)
        i--
      } else if (hasValue && a.startsWith(n + '=')) {
        vals.push(a.slice(n.length + 1))
        args.splice(i, 1)
        i--
      }
    }
  }
  return vals
}

/**
 * The leading options of a command (up to its first operand): booleans and value options, as
 * `--x v`, `--x=v` or `-x v`. Returns the options in order and the operands that follow.
 */
function leadingOptions(args, withValue, booleans, cmd) {
  const opts = []
  let i = 0
  for (; i < args.length; i++) {
    let a = args[i]
    if (!a.startsWith('-') || a === '-') break
    let v = null
    const eq = a.indexOf('=')
    if (a.startsWith('--') && eq > 0) {
      v = a.slice(eq + 1)
      a = a.slice(0, eq)
    } else if (withValue.has(a)) {
      if (i + 1 >= args.length)
        die(`flag needs an argument: '${a.replace(/^-+/, '')}' in ${a}\nSee 'docker ${cmd} --help'.`, 125)
      v = args[++i]
    } else if (!booleans.has(a) && /^-[a-zA-Z]{2,}$/.test(a) && [...a.slice(1)].every((ch) => booleans.has(`-${ch}`))) {
      for (const ch of a.slice(1)) opts.push([`-${ch}`, null])
      continue
    } else if (!booleans.has(a)) die(`unknown flag: ${a}\nSee 'docker ${cmd} --help'.`, 125)
    opts.push([a, v])
  }
  return { opts, rest: args.slice(i) }
}

// ---- pull, with real-shaped output (a non-TTY client: one line per layer status) ----

function human(bytes) {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)}GB`
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)}MB`
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(1)}kB`
  return `${bytes}B`
}
function bar(done, total) {
  const width = 50
  const filled = Math.min(width, Math.floor((done / total) * width))
  return `[${'='.repeat(Math.max(0, filled - 1))}${filled > 0 ? '>' : ''}${' '.repeat(width - filled)}]`
}
/**
 * Pulls `image`, printing progress to `say`; returns null, or the daemon's error message (not
 * printed: `docker pull` and `docker run` report it differently). SIM_PULL_DELAY (seconds) paces
 * the layers; the flag `pull_fails` makes the pull fail while it registers the first layer.
 */
function pull(image, say) {
  const n = normRef(image)
  const [repo, tag] = [repoOf(n), n.slice(repoOf(n).length + 1)]
  if (flag('registry_down')) {
    const host = registryOf(n)
    return `Error response from daemon: Get "https://${host}/v2/": dial tcp: lookup ${host}: no such host`
  }
  if (!pullable(n)) return deniedMessage(n)
  const delay = Number(process.env.SIM_PULL_DELAY ?? 0) * 1000
  say(`${tag}: Pulling from ${repo}`)
  const seed = crypto.createHash('sha256').update(n).digest()
  const layers = [0, 1, 2, 3].map((i) => ({
    id: sha(`${n}#${i}`).slice(0, 12),
    size: 1_000_000 + seed[i] * 400_000,
  }))
  for (const l of layers) say(`${l.id}: Pulling fs layer`)
  for (const l of layers.slice(1)) say(`${l.id}: Waiting`)
  for (const l of layers) {
    for (const f of [0.25, 0.5, 0.75, 1]) {
      const done = Math.round(l.size * f)
      say(`${l.id}: Downloading ${bar(done, l.size)}  ${human(done)}/${human(l.size)}`)
    }
    say(`${l.id}: Verifying Checksum`)
    say(`${l.id}: Download complete`)
    sleepMs(delay)
  }
  for (const [k, l] of layers.entries()) {
    say(`${l.id}: Extracting ${bar(l.size, l.size)}  ${human(l.size)}/${human(l.size)}`)
    if (k === 0 && flag('pull_fails'))
      return 'failed to register layer: write /usr/local/lib/python3.12/dist-packages/vllm/_C.abi3.so: no space left on device'
    say(`${l.id}: Pull complete`)
  }
  say(`Digest: sha256:${sha(n)}`)
  say(`Status: Downloaded newer image for ${n}`)
  addImage(n, `sha256:${sha(`${n}#pulled`)}`)
  return null
}

// ---- running commands in a container ----

/** A bind's host side as a path: a named volume lives under $SIM_STATE/docker/volumes. */
function resolveBind(b) {
  const [host, ...rest] = b.split(':')
  const h = host.startsWith('/') ? host : path.join(DIR, 'volumes', host)
  if (!host.startsWith('/')) fs.mkdirSync(h, { recursive: true })
  return [h, ...rest].join(':')
}

/** The environment of a process in container `c`: its image's tools, its files, its mounts. */
function containerEnv(c, extra) {
  const name = c.Name.slice(1)
  const root = path.join(DIR, 'rootfs', name)
  fs.mkdirSync(path.join(root, 'root'), { recursive: true })
  const env = { ...process.env }
  for (const e of [...(c.Config.Env ?? []), ...extra]) {
    const k = e.split('=')[0]
    env[k] = e.slice(k.length + 1)
  }
  env.HOME = path.join(root, 'root')
  env.SIM_CONTAINER = name
  env.SIM_ROOTFS = root
  env.SIM_IMAGE = c.Config.Image
  env.SIM_BINDS = JSON.stringify((c.HostConfig.Binds ?? []).map(resolveBind))
  env.PATH = `${process.env.SIM_SHIMS}/container:${env.PATH}`
  // A vLLM image has the vllm package installed: the sim's stand-in, and its `vllm` command.
  if (/vllm/.test(c.Config.Image)) {
    env.PYTHONPATH = [path.join(CONTAINER_SIDE, 'python'), env.PYTHONPATH].filter(Boolean).join(':')
    env.PATH = `${path.join(CONTAINER_SIDE, 'bin')}:${env.PATH}`
  }
  return { env, root }
}

// A container named in $SIM_STATE/docker/crash/<name> (holding an exit code) exits right after
// every start, counting a restart each time, like one in a restart loop.
function crashCode(c) {
  try {
    return Number(fs.readFileSync(path.join(DIR, 'crash', c.Name.slice(1)), 'utf8').trim() || '1')
  } catch {
    return null
  }
}
function started(c) {
  const code = crashCode(c)
  if (code === null) return
  appendLog(c, `fatal: engine core initialization failed (exit ${code})`)
  c.RestartCount = (c.RestartCount ?? 0) + 1
  save(c)
  setRunning(c, false, code)
}

// ---- docker run ----

const RUN_VALUE_FLAGS = new Set([
  '--name',
  '-e',
  '--env',
  '-p',
  '--publish',
  '-v',
  '--volume',
  '--restart',
  '--gpus',
  '--label',
  '-l',
  '--shm-size',
  '--ipc',
  '--network',
  '--net',
  '--entrypoint',
  '-w',
  '--workdir',
  '--ulimit',
  '--device',
  '--env-file',
  '--cap-add',
  '--cap-drop',
  '--memory',
  '-m',
  '--memory-swap',
  '--pids-limit',
  '--pull',
  '-u',
  '--user',
  '--platform',
  '--security-opt',
  '--add-host',
  '--hostname',
  '-h',
])
const RUN_BOOLEANS = new Set([
  '-d',
  '--detach',
  '-i',
  '--interactive',
  '-t',
  '--tty',
  '--rm',
  '--privileged',
  '-q',
  '--quiet',
  '--init',
])

function run(args) {
  const { opts, rest } = leadingOptions(args, RUN_VALUE_FLAGS, RUN_BOOLEANS, 'run')
  const flags = { env: [], ports: {}, binds: [], labels: {}, detach: false, name: null, restart: 'no', gpus: null }
  let rm = false
  let entrypoint = null
  let workdir = null
  let pullPolicy = 'missing'
  for (const [a, v] of opts) {
    if (a === '-d' || a === '--detach') flags.detach = true
    else if (a === '--rm') rm = true
    else if (a === '--name') flags.name = v
    else if (a === '-e' || a === '--env') flags.env.push(v.includes('=') ? v : `${v}=${process.env[v] ?? ''}`)
    else if (a === '-p' || a === '--publish') {
      const [h, c] = v.split(':').slice(-2)
      flags.ports[`${c.includes('/') ? c : c + '/tcp'}`] = [{ HostIp: '', HostPort: h }]
    } else if (a === '-v' || a === '--volume') flags.binds.push(v)
    else if (a === '--restart') flags.restart = v
    else if (a === '--gpus') flags.gpus = v
    else if (a === '--entrypoint') entrypoint = v
    else if (a === '-w' || a === '--workdir') workdir = v
    else if (a === '--pull') pullPolicy = v
    else if (a === '--label' || a === '-l') {
      const [k, ...r] = v.split('=')
      flags.labels[k] = r.join('=')
    }
  }
  const image = rest[0]
  if (!image) runDie('"docker run" requires at least 1 argument')
  const command = rest.slice(1)
  const name = flags.name ?? `sim_${crypto.randomBytes(3).toString('hex')}`
  const existing = load(name)
  if (existing)
    runDie(
      `Error response from daemon: Conflict. The container name "/${name}" is already in use by container "${existing.Id}". You have to remove (or rename) that container to be able to reuse that name`,
    )
  if (!findImage(image) || pullPolicy === 'always') {
    if (pullPolicy === 'never') runDie(`Error response from daemon: No such image: ${normRef(image)}`)
    // The pull's progress goes to stderr: stdout carries only the container's output (or its ID).
    if (!findImage(image)) err(`Unable to find image '${normRef(image)}' locally`)
    const failed = pull(image, err)
    if (failed !== null) runDie(failed)
  }
  const id = crypto.randomBytes(32).toString('hex')
  const gpuUser = flags.gpus !== null
  const argv = entrypoint !== null && entrypoint !== '' ? [entrypoint, ...command] : command
  const c = {
    Id: id,
    Created: nowIso(),
    Path: argv[0] ?? '/bin/sh',
    Args: argv.slice(1),
    State: {
      Status: 'created',
      Running: false,
      Paused: false,
      Restarting: false,
      OOMKilled: false,
      Dead: false,
      Pid: 0,
      ExitCode: 0,
      Error: '',
      StartedAt: '0001-01-01T00:00:00Z',
      FinishedAt: '0001-01-01T00:00:00Z',
    },
    Image: findImage(image).id,
    Name: `/${name}`,
    RestartCount: 0,
    HostConfig: {
      Binds: flags.binds,
      PortBindings: flags.ports,
      RestartPolicy: { Name: flags.restart, MaximumRetryCount: 0 },
      AutoRemove: rm,
      DeviceRequests: gpuUser ? [{ Driver: '', Count: -1, Capabilities: [['gpu']] }] : null,
    },
    Config: {
      Hostname: id.slice(0, 12),
      Image: image,
      Env: flags.env,
      Cmd: command,
      Entrypoint: entrypoint === null || entrypoint === '' ? null : [entrypoint],
      WorkingDir: workdir ?? '',
      Labels: flags.labels,
    },
    GpuMiB: gpuUser ? gpuMiB(/vllm/.test(image), command.join(' ')) : 0,
    // vLLM titles its engine process `VLLM::EngineCore` (vllm.utils.system_utils.set_process_title):
    // in a vllm image the GPU user is the engine, whether run directly or dispatched into the container.
    GpuProcess: command[0] === 'vllm' || /vllm/.test(image) ? 'VLLM::EngineCore' : 'python3',
  }
  save(c)
  event(name, 'created')
  if (flags.detach) {
    // A detached container's command is not executed: the sim's fakes stand in for what it runs.
    setRunning(c, true)
    started(c)
    out(id)
    return 0
  }
  // Attached: the command runs to its end with the container's view, its output passed through.
  if (argv.length === 0) {
    removeContainer(c)
    runDie('Error response from daemon: no command specified')
  }
  setRunning(c, true)
  const { env, root } = containerEnv(c, [])
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env, stdio: 'inherit' })
  if (r.error) {
    const code = 127
    setRunning(load(name) ?? c, false, code)
    runDie(
      `Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "${argv[0]}": executable file not found in $PATH: unknown`,
      code,
    )
  }
  const code = r.status ?? 128 + 9
  const now = load(name)
  if (now) setRunning(now, false, code)
  return code
}

// ---- docker exec ----

/**
 * What a GPU user holds, in MiB: an engine what its --gpu-memory-utilization asks of the node's
 * memory (vLLM takes that share of the total, weights and KV cache together; 0.9 when not given,
 * 96 GiB before it is started), a speech service 6 GiB. SIM_CONTAINER_GPU_MIB overrides both.
 */
function gpuMiB(engine, commandText) {
  if (process.env.SIM_CONTAINER_GPU_MIB !== undefined) return Number(process.env.SIM_CONTAINER_GPU_MIB)
  if (!engine) return 6144
  if (!/\bvllm\s+serve\b/.test(commandText)) return 98304
  const util = Number(/--gpu-memory-utilization[= ]+([0-9.]+)/.exec(commandText)?.[1] ?? 0.9)
  const total = Number(process.env.SIM_RAM_BYTES ?? 128849018880)
  return Math.round((util * total) / 1048576)
}

function exec(args) {
  const { opts, rest } = leadingOptions(
    args,
    new Set(['-e', '--env', '-w', '--workdir', '-u', '--user', '--env-file', '--detach-keys']),
    new Set(['-i', '--interactive', '-t', '--tty', '-d', '--detach', '--privileged']),
    'exec',
  )
  const detach = opts.some(([a]) => a === '-d' || a === '--detach')
  const envs = opts.filter(([a]) => a === '-e' || a === '--env').map(([, v]) => v)
  const name = rest.shift()
  const c = name ? load(name) : null
  if (!c) die(`Error response from daemon: No such container: ${name}`)
  if (!c.State.Running) die(`Error response from daemon: container ${c.Id} is not running`)
  if (rest.length === 0) die('"docker exec" requires at least 2 arguments.')
  // Ownership is not simulated: the change is recorded in the container's log and chowns.log.
  if (rest[0] === 'chown') {
    const what = rest.slice(1).join(' ')
    fs.appendFileSync(path.join(DIR, 'chowns.log'), `${name} ${what}\n`)
    appendLog(c, `chown ${what}`)
    return 0
  }
  if (c.GpuProcess === 'VLLM::EngineCore' && /\bvllm\s+serve\b/.test(rest.join(' '))) {
    c.GpuMiB = gpuMiB(true, rest.join(' '))
    save(c)
  }
  const { env, root } = containerEnv(c, envs)
  // File commands on the container's own paths (the speech patches): mapped under its directory.
  const fileRc = containerFileCommand(root, rest)
  if (fileRc !== null) return fileRc
  const notFound = () =>
    die(
      `OCI runtime exec failed: exec failed: unable to start container process: exec: "${rest[0]}": executable file not found in $PATH: unknown`,
      127,
    )
  if (detach) {
    // Dispatched in the background: in the sim it runs now (deterministic). Nothing is attached, so
    // only what the command writes to PID 1's stdout, /proc/1/fd/1, reaches the container's log.
    const pid1 = path.join(DIR, 'logs', `.${name}.pid1.${process.pid}`)
    fs.mkdirSync(path.dirname(pid1), { recursive: true })
    fs.writeFileSync(pid1, '')
    const argv = rest.map((a) => a.split('/proc/1/fd/1').join(pid1))
    const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env, stdio: 'ignore' })
    const written = fs.readFileSync(pid1, 'utf8')
    fs.rmSync(pid1, { force: true })
    if (r.error) notFound()
    const still = load(name)
    if (still) for (const line of written.split('\n').filter((l) => l !== '')) appendLog(still, line)
    return 0
  }
  const r = spawnSync(rest[0], rest.slice(1), { cwd: root, env, stdio: 'inherit' })
  if (r.error) notFound()
  return r.status ?? 1
}

// ---- images: build, tag, save/load, inspect, list, remove ----

function build(args) {
  const tags = takeFlag(args, ['-t', '--tag'], true)
  takeFlag(
    args,
    [
      '-f',
      '--file',
      '--build-arg',
      '--build-context',
      '--target',
      '--network',
      '--progress',
      '--output',
      '-o',
      '--platform',
    ],
    true,
  )
  takeFlag(args, ['--no-cache', '--pull', '-q', '--quiet'], false)
  if (args.length === 0) die('ERROR: "docker buildx build" requires exactly 1 argument.', 1)
  const delay = Number(process.env.SIM_BUILD_DELAY ?? 0) * 1000
  // BuildKit's plain progress goes to stderr.
  err('#0 building with "default" instance using docker driver')
  err('#1 [internal] load build definition from Dockerfile')
  err('#1 DONE 0.0s')
  for (let i = 1; i <= 8; i++) {
    err(`#${i + 4} [runner ${i}/8] RUN step ${i}`)
    sleepMs(delay)
    err(`#${i + 4} DONE ${i}.${i}s`)
  }
  if (flag('build_fails'))
    die('ERROR: failed to solve: process "/bin/sh -c pip install vllm" did not complete successfully: exit code: 1')
  const id = `sha256:${sha(`build#${Date.now()}#${Math.random()}`)}`
  err('#13 exporting to image')
  err(`#13 writing image ${id} done`)
  for (const t of tags) {
    err(`#13 naming to ${qualified(t)} done`)
    addImage(t, id)
  }
  err('#13 DONE 1.2s')
  return 0
}

function imageInspect(args) {
  const fmt = takeFlag(args, ['-f', '--format'], true)[0]
  takeFlag(args, ['--platform'], true)
  if (args.length === 0) die('"docker image inspect" requires at least 1 argument.')
  const found = []
  const errors = []
  for (const r of args) {
    const img = findImage(r)
    if (img) found.push(imageView(img))
    else errors.push(`Error response from daemon: No such image: ${normRef(r)}`)
  }
  if (fmt) for (const v of found) out(render(fmt, v))
  else out(found.length === 0 ? '[]' : JSON.stringify(found, null, 4))
  if (errors.length > 0) die(errors.join('\n'))
  return 0
}

function imagesList(args) {
  const quiet = takeFlag(args, ['-q', '--quiet'], false).length > 0
  const fmt = takeFlag(args, ['--format'], true)[0]
  takeFlag(args, ['-a', '--all', '--no-trunc', '--digests'], false)
  takeFlag(args, ['--filter', '-f'], true)
  const want = args[0]
  const rows = images()
    .filter((i) => want === undefined || repoOf(i.ref) === repoOf(want))
    .map((i) => ({
      Repository: repoOf(i.ref),
      Tag: i.ref.slice(repoOf(i.ref).length + 1),
      ID: i.id.slice(7, 19),
      CreatedSince: `${ago(i.created)} ago`,
      CreatedAt: i.created,
      Size: human(i.size),
    }))
  if (quiet) for (const r of rows) out(r.ID)
  else if (fmt) for (const r of rows) out(render(fmt, r))
  else {
    out('REPOSITORY                         TAG       IMAGE ID       CREATED         SIZE')
    for (const r of rows)
      out(`${r.Repository.padEnd(34)} ${r.Tag.padEnd(9)} ${r.ID}   ${r.CreatedSince.padEnd(15)} ${r.Size}`)
  }
  return 0
}

function tag(args) {
  if (args.length !== 2) die('"docker tag" requires exactly 2 arguments.')
  const src = findImage(args[0])
  if (!src) die(`Error response from daemon: No such image: ${normRef(args[0])}`)
  addImage(args[1], src.id, src.size)
  return 0
}

function rmi(args) {
  takeFlag(args, ['-f', '--force', '--no-prune'], false)
  let rc = 0
  for (const r of args) {
    const img = findImage(r)
    if (!img) {
      err(`Error response from daemon: No such image: ${normRef(r)}`)
      rc = 1
      continue
    }
    saveImages(images().filter((i) => i.ref !== img.ref))
    out(`Untagged: ${img.ref}`)
    if (!images().some((i) => i.id === img.id)) out(`Deleted: ${img.id}`)
  }
  return rc
}

/** `docker save`: the sim's archive is a small JSON manifest of the images (refs and IDs). */
function saveArchive(args) {
  const file = takeFlag(args, ['-o', '--output'], true)[0]
  const list = []
  for (const r of args) {
    const img = findImage(r)
    if (!img) die('Error response from daemon: reference does not exist')
    list.push(img)
  }
  const text = JSON.stringify({ sim_docker_archive: 1, images: list })
  if (file) fs.writeFileSync(file, text)
  else process.stdout.write(text)
  return 0
}
function loadArchive(args) {
  const file = takeFlag(args, ['-i', '--input'], true)[0]
  takeFlag(args, ['-q', '--quiet'], false)
  let text = ''
  try {
    text = fs.readFileSync(file ?? 0, 'utf8')
  } catch {
    die(`open ${file}: no such file or directory`)
  }
  let archive
  try {
    archive = JSON.parse(text)
  } catch {
    die('Error response from daemon: unexpected EOF')
  }
  for (const img of archive.images ?? []) {
    addImage(img.ref, img.id, img.size)
    out(`Loaded image: ${img.ref}`)
  }
  return 0
}

// ---- dispatch ----

function main(argv) {
  const args = argv.slice()
  const cmd = args.shift()
  switch (cmd) {
    case 'ps': {
      const showAll = takeFlag(args, ['-a', '--all'], false).length > 0
      const fmt = takeFlag(args, ['--format'], true)[0]
      const filters = takeFlag(args, ['--filter', '-f'], true)
      const quiet = takeFlag(args, ['-q'], false).length > 0
      let list = all().filter((c) => showAll || c.State.Running)
      for (const f of filters) {
        const [k, v] = f.split('=')
        if (k === 'name') list = list.filter((c) => new RegExp(v).test(c.Name.slice(1)))
        if (k === 'status') list = list.filter((c) => c.State.Status === v)
      }
      if (quiet) for (const c of list) out(c.Id.slice(0, 12))
      else if (fmt) for (const c of list) out(render(fmt, psView(c)))
      else {
        out(
          'CONTAINER ID   IMAGE' +
            ' '.repeat(30) +
            'COMMAND                  CREATED          STATUS                 PORTS     NAMES',
        )
        for (const c of list) {
          const v = psView(c)
          out(
            `${v.ID}   ${v.Image.padEnd(34)} ${v.Command.padEnd(24)} ${v.RunningFor.padEnd(16)} ${v.Status.padEnd(22)} ${v.Ports.padEnd(9)} ${v.Names}`,
          )
        }
      }
      return 0
    }
    case 'inspect': {
      const fmt = takeFlag(args, ['-f', '--format'], true)[0]
      const type = takeFlag(args, ['--type'], true)[0]
      if (type === 'image') return imageInspect([...(fmt ? ['--format', fmt] : []), ...args])
      let missing = false
      const found = []
      for (const n of args) {
        const c = type === undefined || type === 'container' ? load(n) : null
        const img = c === null && type === undefined ? findImage(n) : null
        if (c) {
          const { GpuMiB: _g, GpuProcess: _p, ...rest } = c
          found.push(rest)
        } else if (img) found.push(imageView(img))
        else {
          missing = true
          err(`Error: No such object: ${n}`)
        }
      }
      if (fmt) for (const v of found) out(render(fmt, v))
      else out(JSON.stringify(found, null, 4))
      return missing ? 1 : 0
    }
    case 'image': {
      const sub = args.shift()
      if (sub === 'inspect') return imageInspect(args)
      if (sub === 'ls' || sub === 'list') return imagesList(args)
      if (sub === 'rm' || sub === 'remove') return rmi(args)
      if (sub === 'tag') return tag(args)
      if (sub === 'pull') return main(['pull', ...args])
      if (sub === 'save') return saveArchive(args)
      if (sub === 'load') return loadArchive(args)
      return die(`docker: 'image ${sub ?? ''}' is not a docker command.\nSee 'docker image --help'`)
    }
    case 'start':
    case 'stop':
    case 'restart':
    case 'kill': {
      takeFlag(args, ['-t', '--time', '-s', '--signal'], true)
      let rc = 0
      for (const n of args) {
        const c = load(n)
        if (!c) {
          err(`Error response from daemon: No such container: ${n}`)
          rc = 1
          continue
        }
        if (cmd === 'start' && !c.State.Running) {
          setRunning(c, true)
          started(c)
        }
        if ((cmd === 'stop' || cmd === 'kill') && c.State.Running) setRunning(c, false, cmd === 'kill' ? 137 : 0)
        if (cmd === 'restart') {
          if (c.State.Running) setRunning(c, false, 0, { keep: true })
          c.RestartCount = (c.RestartCount ?? 0) + 1
          setRunning(c, true)
          started(c)
        }
        out(n)
      }
      return rc
    }
    case 'rm': {
      const force = takeFlag(args, ['-f', '--force'], false).length > 0
      for (const n of args) {
        const c = load(n)
        if (!c) die(`Error response from daemon: No such container: ${n}`)
        if (c.State.Running && !force)
          die(
            `Error response from daemon: cannot remove container "/${n}": container is running: stop the container before removing or force remove`,
          )
        // Like docker: a removed container's log and files go with it (a new one starts from its image).
        removeContainer(c)
        out(n)
      }
      return 0
    }
    case 'run':
      return run(args)
    case 'exec':
      return exec(args)
    case 'cp': {
      const [src, dst] = args
      const map = (p) => {
        const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*):(\/.*)$/.exec(p)
        if (!m) return p
        if (!load(m[1])) die(`Error response from daemon: No such container: ${m[1]}`)
        return path.join(DIR, 'rootfs', m[1], m[2])
      }
      const from = map(src)
      const to = map(dst)
      fs.mkdirSync(path.dirname(to), { recursive: true })
      fs.cpSync(from, to, { recursive: true })
      return 0
    }
    case 'logs': {
      const tail = takeFlag(args, ['--tail', '-n'], true)[0]
      takeFlag(args, ['--since', '--until'], true)
      takeFlag(args, ['-f', '--follow', '-t', '--timestamps'], false)
      const name = args[0]
      if (!load(name)) die(`Error response from daemon: No such container: ${name}`)
      let lines = []
      try {
        lines = fs
          .readFileSync(path.join(DIR, 'logs', `${name}.log`), 'utf8')
          .split('\n')
          .filter(Boolean)
      } catch {
        // No log file yet: the container has printed nothing.
      }
      if (tail && tail !== 'all') lines = lines.slice(-Number(tail))
      for (const l of lines) out(l)
      return 0
    }
    case 'pull': {
      takeFlag(args, ['-q', '--quiet', '-a', '--all-tags'], false)
      takeFlag(args, ['--platform'], true)
      if (args.length !== 1) die('"docker pull" requires exactly 1 argument.')
      const n = normRef(args[0])
      if (!args[0].includes('@') && !args[0].slice(args[0].lastIndexOf('/') + 1).includes(':'))
        out('Using default tag: latest')
      const failed = pull(args[0], out)
      if (failed !== null) die(failed)
      out(qualified(n))
      return 0
    }
    case 'login': {
      const user = takeFlag(args, ['-u', '--username'], true)[0]
      const stdinPw = takeFlag(args, ['--password-stdin'], false).length > 0
      takeFlag(args, ['-p', '--password'], true)
      const pw = stdinPw ? fs.readFileSync(0, 'utf8').replace(/\r?\n$/, '') : ''
      if (!user || (stdinPw && pw === '')) die('Error: Cannot perform an interactive login from a non TTY device')
      if (pw === 'wrong')
        die(
          `Error response from daemon: Get "https://${args[0] ?? 'registry'}/v2/": unauthorized: incorrect username or password`,
        )
      if (!stdinPw) err('WARNING! Using --password via the CLI is insecure. Use --password-stdin.')
      // What the registry saw, for tests: the server, the user and a hash of the password.
      fs.appendFileSync(path.join(DIR, 'logins.log'), `${args[0] ?? 'docker.io'} ${user} ${sha(pw)}\n`)
      out('Login Succeeded')
      return 0
    }
    case 'images':
      return imagesList(args)
    case 'build':
      return build(args)
    case 'tag':
      return tag(args)
    case 'rmi':
      return rmi(args)
    case 'save':
      return saveArchive(args)
    case 'load':
      return loadArchive(args)
    case '--version':
    case 'version':
      out('Docker version 28.5.1, build e180ab8')
      return 0
    default:
      return die(`docker: '${cmd}' is not a docker command.\nSee 'docker --help'`)
  }
}

process.exit(main(process.argv.slice(2)))
