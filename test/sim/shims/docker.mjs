// Simulated docker CLI. Containers live as JSON files under $SIM_STATE/docker so state survives
// between commands; running GPU users are mirrored into $SIM_STATE/gpu-procs for nvidia-smi, and
// every state change is appended to $SIM_STATE/docker/events.log for the sim to observe.
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { containerFileCommand } from './containerFiles.mjs'

const STATE = process.env.SIM_STATE
const DIR = path.join(STATE, 'docker')
const CDIR = path.join(DIR, 'containers')
const IMAGES = path.join(DIR, 'images.json')
fs.mkdirSync(CDIR, { recursive: true })
fs.mkdirSync(path.join(STATE, 'gpu-procs'), { recursive: true })

const out = (s) => process.stdout.write(s + '\n')
const die = (msg, code = 1) => {
  process.stderr.write(msg + '\n')
  process.exit(code)
}
const readJson = (f, d) => {
  try {
    return JSON.parse(fs.readFileSync(f, 'utf8'))
  } catch {
    return d
  }
}
const images = () => readJson(IMAGES, [])
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
const nowIso = () => new Date().toISOString()
const event = (name, what) => fs.appendFileSync(path.join(DIR, 'events.log'), `${Date.now()} ${name} ${what}\n`)

function save(c) {
  fs.writeFileSync(cfile(c.Name.slice(1)), JSON.stringify(c, null, 2))
  const gp = path.join(STATE, 'gpu-procs', c.Name.slice(1))
  if (c.State.Running && c.GpuMiB > 0) fs.writeFileSync(gp, `${c.State.Pid},${c.GpuProcess},${c.GpuMiB}`)
  else fs.rmSync(gp, { force: true })
}

function setRunning(c, running, exitCode = 0) {
  c.State.Running = running
  c.State.Status = running ? 'running' : 'exited'
  c.State.Pid = running ? 10000 + Math.floor(Math.random() * 50000) : 0
  c.State.ExitCode = running ? 0 : exitCode
  if (running) c.State.StartedAt = nowIso()
  else c.State.FinishedAt = nowIso()
  save(c)
  event(c.Name.slice(1), c.State.Status)
  appendLog(c, running ? 'container started' : 'container stopped')
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

// Real-shaped `docker pull` output as a non-TTY client prints it: per layer a status line per
// step, with "Downloading [==>   ]  12.5MB/98.3MB" progress lines in between.
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
function pull(image) {
  const [repo, tag = 'latest'] = image.split(/:(?=[^/]+$)/)
  if (fs.existsSync(path.join(STATE, 'registry_down')))
    die(
      `Error response from daemon: Get "https://${repo.split('/')[0]}/v2/": dial tcp: lookup ${repo.split('/')[0]}: no such host`,
    )
  out(`${tag}: Pulling from ${repo}`)
  const seed = crypto.createHash('sha256').update(image).digest()
  const layers = [0, 1, 2, 3].map((i) => ({
    id: crypto.createHash('sha256').update(`${image}#${i}`).digest('hex').slice(0, 12),
    size: 1_000_000 + seed[i] * 400_000,
  }))
  for (const l of layers) out(`${l.id}: Pulling fs layer`)
  for (const l of layers.slice(1)) out(`${l.id}: Waiting`)
  for (const l of layers) {
    for (const f of [0.25, 0.5, 0.75, 1]) {
      const done = Math.round(l.size * f)
      out(`${l.id}: Downloading ${bar(done, l.size)}  ${human(done)}/${human(l.size)}`)
    }
    out(`${l.id}: Verifying Checksum`)
    out(`${l.id}: Download complete`)
  }
  for (const l of layers) {
    out(`${l.id}: Extracting ${bar(l.size, l.size)}  ${human(l.size)}/${human(l.size)}`)
    out(`${l.id}: Pull complete`)
  }
  out(`Digest: sha256:${crypto.createHash('sha256').update(image).digest('hex')}`)
  out(`Status: Downloaded newer image for ${repo}:${tag}`)
  out(`${image.includes(':') ? image : image + ':latest'}`)
  const list = images().filter((i) => i !== image)
  list.push(image)
  fs.writeFileSync(IMAGES, JSON.stringify(list))
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
  setRunning(c, false, code)
  c.RestartCount = (c.RestartCount ?? 0) + 1
  save(c)
}

const args = process.argv.slice(2)
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
    break
  }
  case 'inspect': {
    const fmt = takeFlag(args, ['-f', '--format'], true)[0]
    takeFlag(args, ['--type'], true)
    let missing = false
    const found = []
    for (const n of args) {
      const c = load(n)
      if (!c) {
        missing = true
        process.stderr.write(`Error: No such object: ${n}\n`)
      } else found.push(c)
    }
    const view = (c) => {
      const { GpuMiB: _g, GpuProcess: _p, ...rest } = c
      return rest
    }
    if (fmt) for (const c of found) out(render(fmt, view(c)))
    else out(JSON.stringify(found.map(view), null, 4))
    process.exit(missing ? 1 : 0)
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
        process.stderr.write(`Error response from daemon: No such container: ${n}\n`)
        rc = 1
        continue
      }
      if (cmd === 'start' && !c.State.Running) {
        setRunning(c, true)
        started(c)
      }
      if ((cmd === 'stop' || cmd === 'kill') && c.State.Running) setRunning(c, false, cmd === 'kill' ? 137 : 0)
      if (cmd === 'restart') {
        if (c.State.Running) setRunning(c, false)
        c.RestartCount = (c.RestartCount ?? 0) + 1
        setRunning(c, true)
        started(c)
      }
      out(n)
    }
    process.exit(rc)
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
      if (c.State.Running) setRunning(c, false, 137)
      fs.rmSync(cfile(c.Name.slice(1)))
      // Like docker: a removed container's log goes with it.
      fs.rmSync(path.join(DIR, 'logs', `${c.Name.slice(1)}.log`), { force: true })
      // …and so do its files: a new container starts from its image.
      fs.rmSync(path.join(DIR, 'rootfs', c.Name.slice(1)), { recursive: true, force: true })
      event(c.Name.slice(1), 'removed')
      out(n)
    }
    break
  }
  case 'run': {
    // Flags before the image; everything after it is the command.
    const flags = {
      env: [],
      ports: {},
      binds: [],
      labels: {},
      detach: false,
      name: null,
      restart: 'no',
      gpus: null,
      rm: false,
    }
    let i = 0
    const withValue = new Set([
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
      '--ulimit',
      '--device',
      '--env-file',
    ])
    for (; i < args.length; i++) {
      let a = args[i]
      if (!a.startsWith('-')) break
      let v = null
      const eq = a.indexOf('=')
      if (a.startsWith('--') && eq > 0) {
        v = a.slice(eq + 1)
        a = a.slice(0, eq)
      } else if (withValue.has(a)) v = args[++i]
      if (a === '-d' || a === '--detach') flags.detach = true
      else if (a === '-it' || a === '-i' || a === '-t' || a === '--privileged') continue
      else if (a === '--rm') flags.rm = true
      else if (a === '--name') flags.name = v
      else if (a === '-e' || a === '--env') flags.env.push(v.includes('=') ? v : `${v}=${process.env[v] ?? ''}`)
      else if (a === '-p' || a === '--publish') {
        const [h, c] = v.split(':').slice(-2)
        flags.ports[`${c.includes('/') ? c : c + '/tcp'}`] = [{ HostIp: '', HostPort: h }]
      } else if (a === '-v' || a === '--volume') flags.binds.push(v)
      else if (a === '--restart') flags.restart = v
      else if (a === '--gpus') flags.gpus = v
      else if (a === '--label' || a === '-l') {
        const [k, ...r] = v.split('=')
        flags.labels[k] = r.join('=')
      } else if (!withValue.has(a)) die(`unknown flag: ${a}\nSee 'docker run --help'.`, 125)
    }
    const image = args[i]
    if (!image) die('"docker run" requires at least 1 argument.', 125)
    const command = args.slice(i + 1)
    const name = flags.name ?? `sim_${crypto.randomBytes(3).toString('hex')}`
    const existing = load(name)
    if (existing)
      die(
        `docker: Error response from daemon: Conflict. The container name "/${name}" is already in use by container "${existing.Id}". You have to remove (or rename) that container to be able to reuse that name.`,
        125,
      )
    if (!images().includes(image)) {
      process.stderr.write(`Unable to find image '${image}' locally\n`)
      pull(image)
    }
    const id = crypto.randomBytes(32).toString('hex')
    const gpuUser = flags.gpus !== null
    const c = {
      Id: id,
      Created: nowIso(),
      Path: command[0] ?? '/bin/sh',
      Args: command.slice(1),
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
      Image: `sha256:${crypto.createHash('sha256').update(image).digest('hex')}`,
      Name: `/${name}`,
      RestartCount: 0,
      HostConfig: {
        Binds: flags.binds,
        PortBindings: flags.ports,
        RestartPolicy: { Name: flags.restart, MaximumRetryCount: 0 },
        DeviceRequests: gpuUser ? [{ Driver: '', Count: -1, Capabilities: [['gpu']] }] : null,
      },
      Config: { Hostname: id.slice(0, 12), Image: image, Env: flags.env, Cmd: command, Labels: flags.labels },
      GpuMiB: gpuUser ? Number(process.env.SIM_CONTAINER_GPU_MIB ?? (/vllm/.test(image) ? 98304 : 6144)) : 0,
      GpuProcess: command[0] === 'vllm' ? 'VLLM::EngineCore' : 'python3',
    }
    save(c)
    event(name, 'created')
    setRunning(c, true)
    started(c)
    if (flags.detach) out(id)
    break
  }
  case 'exec': {
    takeFlag(args, ['-i', '-t', '-it', '-d'], false)
    const envs = takeFlag(args, ['-e', '--env'], true)
    takeFlag(args, ['-w', '--workdir', '-u', '--user'], true)
    const name = args.shift()
    const c = name ? load(name) : null
    if (!c) die(`Error response from daemon: No such container: ${name}`)
    if (!c.State.Running) die(`Error response from daemon: container ${c.Id} is not running`)
    if (args.length === 0) die('"docker exec" requires at least 2 arguments.')
    // Ownership is not simulated: the change is recorded in the container's log and chowns.log.
    if (args[0] === 'chown') {
      const what = args.slice(1).join(' ')
      fs.appendFileSync(path.join(DIR, 'chowns.log'), `${name} ${what}\n`)
      appendLog(c, `chown ${what}`)
      process.exit(0)
    }
    const root = path.join(DIR, 'rootfs', name)
    fs.mkdirSync(root, { recursive: true })
    // File commands on the container's own paths (the speech patches): mapped under its directory.
    const fileRc = containerFileCommand(root, args)
    if (fileRc !== null) process.exit(fileRc)
    const env = { ...process.env }
    for (const e of [...(c.Config.Env ?? []), ...envs]) {
      const k = e.split('=')[0]
      env[k] = e.slice(k.length + 1)
    }
    env.SIM_CONTAINER = name
    env.SIM_ROOTFS = root
    env.PATH = `${process.env.SIM_SHIMS}/container:${env.PATH}`
    // A vLLM image has the vllm package installed: the sim's stand-in has its argument-parser layout.
    if (/vllm/.test(c.Config.Image))
      env.PYTHONPATH = [path.join(process.env.SIM_SHIMS, '..', 'container', 'python'), env.PYTHONPATH]
        .filter(Boolean)
        .join(':')
    const r = spawnSync(args[0], args.slice(1), { cwd: root, env, stdio: 'inherit' })
    if (r.error)
      die(
        `OCI runtime exec failed: exec failed: unable to start container process: exec: "${args[0]}": executable file not found in $PATH: unknown`,
        127,
      )
    process.exit(r.status ?? 1)
  }
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
    break
  }
  case 'logs': {
    const tail = takeFlag(args, ['--tail', '-n'], true)[0]
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
    break
  }
  case 'pull':
    if (!args[0]) die('"docker pull" requires exactly 1 argument.')
    pull(args[0])
    break
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
    if (!stdinPw) process.stderr.write('WARNING! Using --password via the CLI is insecure. Use --password-stdin.\n')
    // What the registry saw, for tests: the server, the user and a hash of the password.
    const sha = crypto.createHash('sha256').update(pw).digest('hex')
    fs.appendFileSync(path.join(DIR, 'logins.log'), `${args[0] ?? 'docker.io'} ${user} ${sha}\n`)
    out('Login Succeeded')
    break
  }
  case 'images':
    out('REPOSITORY                         TAG       IMAGE ID       CREATED       SIZE')
    for (const im of images()) {
      const [r, t = 'latest'] = im.split(/:(?=[^/]+$)/)
      out(
        `${r.padEnd(34)} ${t.padEnd(9)} ${crypto.createHash('sha256').update(im).digest('hex').slice(0, 12)}   2 days ago    18.2GB`,
      )
    }
    break
  case 'build':
    out('#0 building with "default" instance using docker driver')
    out('#1 [internal] load build definition from Dockerfile')
    out('#1 DONE 0.0s')
    break
  case 'save':
  case 'load':
    out(cmd === 'load' ? 'Loaded image: vllm-node:latest' : '')
    break
  case '--version':
  case 'version':
    out('Docker version 28.5.1, build e180ab8')
    break
  default:
    die(`docker: '${cmd}' is not a docker command.\nSee 'docker --help'`)
}
