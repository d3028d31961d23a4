import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ssh2 from 'ssh2'
import { generateEd25519PrivateKey } from '../../src-main/ssh/keys'
import { knownModel, SIM_REVISION, writeSnapshot } from './shims/hubModels.mjs'

/**
 * The simulated cluster (DESIGN.md, Tests), two nodes unless asked for more: per node an ssh2
 * server on the node's own loopback address (node1 127.0.0.1, node2 127.0.0.2, nodeK 127.0.0.K)
 * whose `exec` runs `bash -c` with the node's own HOME and a PATH of shims (docker, nvidia-smi, ip,
 * …), so real shell expansion and quoting happen exactly as on a real node. The loopback address is
 * also the node's cluster-link address and where its services listen, so several nodes can each
 * serve an engine on the same port, as real nodes do. node1 carries a launcher checkout that is a
 * real git repository with an origin (ahead/behind is real git); the others have none unless
 * `launcherNodes` names them (a placement's head runs the launcher).
 */
const here = path.dirname(fileURLToPath(import.meta.url))
export const SHIMS_DIR = path.join(here, 'shims')
const LAUNCHER_SRC = path.join(here, 'launcher')
/** The early-2026 launch-cluster.sh and build-and-copy.sh (the older commit of the launcher's history). */
const LAUNCHER_EARLY_SRC = path.join(here, 'launcher-early')

export type SimNodeName = `node${number}`

/** Nodes a sim can have (node1…node8): the loopback addresses 127.0.0.1…127.0.0.8. */
export const MAX_SIM_NODES = 8

export interface SimNodeOptions {
  user?: string
  hostname?: string
  mac?: string
  /** The address the node pretends to have on its LAN (shown by `ip`, used by the launcher). */
  lanIp?: string
  cores?: number
  ramBytes?: number
  /**
   * The node's own loopback address (default 127.0.0.K for nodeK): its SSH server and services
   * listen there, and it is its cluster-link address (what `ibdev2netdev`/`ip` report, what the
   * launcher's `-n` lists name).
   */
  address?: string
  /** Fixed SSH port; 0 = ephemeral. */
  port?: number
  /** HF_HOME in the node's environment (absolute, or relative to the node's directory); unset when absent. */
  hfHome?: string
}

export interface SimClusterOptions {
  /** Directory for homes and state; a temp directory when absent (removed on close). */
  root?: string
  node1?: SimNodeOptions
  node2?: SimNodeOptions
  /** How many nodes (node1…nodeN, at most MAX_SIM_NODES); default 2. */
  nodeCount?: number
  /** Options of any node by name (node3 and past; node1/node2 also take `node1`/`node2`). */
  nodeOptions?: Partial<Record<SimNodeName, SimNodeOptions>>
  /** Nodes with a launcher checkout at ~/spark-vllm-docker (default node1 only). */
  launcherNodes?: readonly SimNodeName[]
  /** Public key lines authorised on both nodes (appended to each ~/.ssh/authorized_keys). */
  authorizedKeys?: string[]
  /** Containers created at start (through the simulated docker itself). */
  containers?: Partial<Record<SimNodeName, SimContainerSeed[]>>
  /** Models already in each node's hub cache. */
  cachedModels?: Partial<Record<SimNodeName, string[]>>
  /** Commits on origin that node1's launcher checkout does not have yet (on top of the mid generation). */
  launcherBehind?: number
  /**
   * The launcher generation node1's checkout is at (default 'mid'). The origin's history holds both:
   * the early-2026 scripts in an older commit, the mid-2026 ones in the next (test/fixtures/launcher/README.md).
   */
  launcherGeneration?: LauncherGeneration
  /** Images each node has locally (besides its seeded containers' images); default: vllm-node on both. */
  images?: Partial<Record<SimNodeName, string[]>>
  /** Repos that fit only across several nodes: a head's simulated vLLM runs out of memory loading them with tp < 2. */
  clusterOnlyModels?: string[]
  /** llm port the launcher reports in its output. */
  llmPort?: number
  /** Sees every container event, including those from seeding (before startSimCluster returns). */
  onContainerEvent?: (e: ContainerEvent) => void
}

export type LauncherGeneration = 'early' | 'mid'

export interface SimContainerSeed {
  name: string
  image: string
  ports?: [number, number][]
  /**
   * Bind mounts `host:container[:opts]`; a host path starting `~/` is in the node's home, `$HF_CACHE`
   * is the node's hub cache home (`${HF_HOME:-~/.cache/huggingface}`).
   */
  volumes?: string[]
  gpu?: boolean
  running?: boolean
  command?: string[]
}

export interface FailRule {
  match: string | RegExp
  code: number
  stderr: string
}

export interface ContainerEvent {
  node: SimNodeName
  name: string
  /** created | running | exited | removed | serve */
  state: string
  /** For `serve`: the model name vLLM serves (its served name). */
  model?: string
  /** For `serve`: why the engine will fail to load it (`oom`: it does not fit one node), if it will. */
  failure?: string
}

export class SimNode {
  readonly home: string
  readonly state: string
  port = 0
  readonly hostKeys: string[] = []
  private server: ssh2.Server | null = null
  private blackhole: net.Server | null = null
  private readonly clients = new Set<ssh2.Connection>()
  private readonly children = new Set<ChildProcess>()
  private readonly hung = new Set<net.Socket>()
  private slowMs = 0
  private frozen = false
  private failRules: FailRule[] = []
  private eventsOffset = 0
  /** Every command the node was asked to run, in order. */
  readonly commands: string[] = []
  /**
   * Runs after each command: a command may change other nodes' containers (the launcher starts and
   * stops its workers'), so the cluster reads every node's events then.
   */
  afterCommand: () => void = () => this.drainEvents()

  constructor(
    readonly name: SimNodeName,
    readonly opts: Required<Omit<SimNodeOptions, 'port' | 'hfHome'>> & { port: number; hfHome?: string },
    readonly root: string,
    private readonly env: () => Record<string, string>,
    private readonly onEvent: (e: ContainerEvent) => void,
  ) {
    this.home = path.join(root, name, 'home')
    this.state = path.join(root, name, 'state')
    fs.mkdirSync(path.join(this.home, '.ssh'), { recursive: true, mode: 0o700 })
    fs.mkdirSync(path.join(this.state, 'docker'), { recursive: true })
    fs.writeFileSync(path.join(this.state, 'boot_time'), String(Math.floor(Date.now() / 1000) - 3 * 86400 - 4 * 3600))
    this.hostKeys.push(generateEd25519PrivateKey())
  }

  get user(): string {
    return this.opts.user
  }

  /** The node's own loopback address: its SSH server, its services, its cluster link. */
  get address(): string {
    return this.opts.address
  }

  /** The hub cache as the hub CLI and the launcher find it: `${HF_HOME:-$HOME/.cache/huggingface}/hub`. */
  get hubDir(): string {
    const hf = this.opts.hfHome
    const home = hf ? path.resolve(path.dirname(this.home), hf) : path.join(this.home, '.cache', 'huggingface')
    return path.join(home, 'hub')
  }

  /** Adds a public key line to the node's ~/.ssh/authorized_keys. */
  authorize(publicKeyLine: string): void {
    fs.appendFileSync(path.join(this.home, '.ssh', 'authorized_keys'), publicKeyLine.trim() + '\n', { mode: 0o600 })
  }

  /** The environment a command on this node runs with. */
  execEnv(): Record<string, string> {
    return {
      HOME: this.home,
      USER: this.opts.user,
      LOGNAME: this.opts.user,
      SHELL: '/bin/bash',
      LANG: 'C.UTF-8',
      PATH: `${SHIMS_DIR}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      SIM_NODE: this.name,
      SIM_STATE: this.state,
      SIM_SHIMS: SHIMS_DIR,
      SIM_NODE_BIN: process.execPath,
      SIM_HOSTNAME: this.opts.hostname,
      SIM_MAC: this.opts.mac,
      SIM_IP: this.opts.lanIp,
      SIM_LINK_IP: this.opts.address,
      SIM_CORES: String(this.opts.cores),
      SIM_RAM_BYTES: String(this.opts.ramBytes),
      ...(this.opts.hfHome ? { HF_HOME: path.dirname(this.hubDir) } : {}),
      ...this.env(),
    }
  }

  /** Runs a command locally as the node would (set-up and tests), bypassing SSH. */
  runLocal(command: string): { code: number; stdout: string; stderr: string } {
    const r = spawnSync('bash', ['-c', command], { cwd: this.home, env: this.execEnv(), encoding: 'utf8' })
    this.afterCommand()
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
  }

  async listen(): Promise<void> {
    const authorized = (): ssh2.ParsedKey[] => {
      let text: string
      try {
        text = fs.readFileSync(path.join(this.home, '.ssh', 'authorized_keys'), 'utf8')
      } catch {
        return []
      }
      return text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => ssh2.utils.parseKey(l))
        .filter((k): k is ssh2.ParsedKey => !(k instanceof Error) && !Array.isArray(k))
    }
    const server = new ssh2.Server({ hostKeys: this.hostKeys }, (client) => {
      this.clients.add(client)
      ;(client as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true)
      client.on('close', () => this.clients.delete(client))
      client.on('error', () => undefined)
      client.on('authentication', (ctx) => {
        if (ctx.method !== 'publickey' || ctx.username !== this.opts.user) return ctx.reject(['publickey'])
        const key = authorized().find((k) => k.type === ctx.key.algo && k.getPublicSSH().equals(ctx.key.data))
        if (!key) return ctx.reject(['publickey'])
        if (ctx.signature && ctx.blob && key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true)
          return ctx.reject(['publickey'])
        ctx.accept()
      })
      client.on('ready', () => {
        client.on('session', (acceptSession) => {
          // Frozen: the TCP connection stays up but nothing answers (a wedged or half-dead host).
          if (this.frozen) return
          const session = acceptSession()
          const extraEnv: Record<string, string> = {}
          session.on('env', (accept, _reject, info) => {
            extraEnv[info.key] = info.val
            accept?.()
          })
          session.on('exec', (accept, _reject, info) => {
            const stream = accept()
            void this.exec(info.command, extraEnv, stream, session)
          })
        })
      })
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, this.opts.address, () => {
        server.off('error', reject)
        this.port = (server.address() as net.AddressInfo).port
        resolve()
      })
    })
    this.server = server
  }

  private async exec(
    command: string,
    extraEnv: Record<string, string>,
    stream: ssh2.ServerChannel,
    session: ssh2.Session,
  ): Promise<void> {
    this.commands.push(command)
    if (this.slowMs > 0) {
      let gone = false
      stream.once('close', () => (gone = true))
      await new Promise((r) => setTimeout(r, this.slowMs))
      // The node went down (or the client left) during the delay: nothing runs.
      if (gone) return
    }
    const rule = this.failRules.find((r) =>
      typeof r.match === 'string' ? command.includes(r.match) : r.match.test(command),
    )
    if (rule) {
      stream.stderr.write(rule.stderr.endsWith('\n') ? rule.stderr : rule.stderr + '\n')
      stream.exit(rule.code)
      stream.end()
      return
    }
    const child = spawn('bash', ['-c', command], {
      cwd: this.home,
      env: { ...this.execEnv(), ...extraEnv },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.children.add(child)
    // bash could not start (the node's home is gone: the sim is closing): the command fails.
    child.on('error', () => {
      this.children.delete(child)
      try {
        stream.exit(127)
        stream.end()
      } catch {
        // the client went away first
      }
    })
    let exited = false
    const kill = (sig: NodeJS.Signals): void => {
      if (exited || child.pid === undefined) return
      try {
        process.kill(-child.pid, sig)
      } catch {
        // already gone
      }
    }
    session.on('signal', (_accept, _reject, info) => kill(`SIG${info.name}` as NodeJS.Signals))
    stream.on('close', () => kill('SIGKILL'))
    child.stdin.on('error', () => undefined)
    stream.pipe(child.stdin)
    child.stdout.pipe(stream, { end: false })
    child.stderr.pipe(stream.stderr, { end: false })
    child.on('close', (code, signal) => {
      exited = true
      this.children.delete(child)
      this.afterCommand()
      try {
        if (code !== null) stream.exit(code)
        else stream.exit((signal ?? 'SIGKILL').replace(/^SIG/, ''), false, '')
        stream.end()
      } catch {
        // the client went away first
      }
    })
  }

  /** Reads container state changes the docker shim appended since the last look. */
  drainEvents(): void {
    const file = path.join(this.state, 'docker', 'events.log')
    let buf: Buffer
    try {
      buf = fs.readFileSync(file)
    } catch {
      return
    }
    if (buf.length <= this.eventsOffset) return
    const text = buf.subarray(this.eventsOffset).toString('utf8')
    this.eventsOffset = buf.length
    for (const line of text.split('\n')) {
      const [, name, state, model, failure] = line.trim().split(' ')
      if (name && state)
        this.onEvent({ node: this.name, name, state, ...(model ? { model } : {}), ...(failure ? { failure } : {}) })
    }
  }

  // ---- faults ----

  /** Stops accepting: new connections are refused and open ones are dropped. */
  async down(): Promise<void> {
    const closing = this.closeListeners()
    for (const c of this.clients) {
      c.end()
      // Like a powered-off host: the socket goes away whether or not the peer says goodbye.
      ;(c as unknown as { _sock?: { destroy(): void } })._sock?.destroy()
    }
    this.clients.clear()
    await closing
  }

  /** Accepts TCP but never answers the SSH handshake: a node that hangs (probes time out). */
  async hang(): Promise<void> {
    await this.down()
    const bh = net.createServer((sock) => {
      this.hung.add(sock)
      sock.on('close', () => this.hung.delete(sock))
      sock.on('error', () => undefined)
    })
    await new Promise<void>((resolve) => bh.listen(this.port, this.opts.address, resolve))
    this.blackhole = bh
  }

  /** Back up on the same port, with the same host key. */
  async up(): Promise<void> {
    await this.closeListeners()
    await this.listen()
  }

  /** Presents a different host key from now on (a reinstalled node). */
  async rotateHostKey(): Promise<void> {
    this.hostKeys.splice(0, this.hostKeys.length, generateEd25519PrivateKey())
    await this.down()
    await this.listen()
  }

  /** Open connections stay up but no new command gets a channel, until clearFaults(). */
  freeze(): void {
    this.frozen = true
  }

  /** Delay before every command runs. */
  setSlow(ms: number): void {
    this.slowMs = ms
  }

  /** Commands matching `match` fail with `code` and `stderr` without running. */
  failCommand(match: string | RegExp, code = 1, stderr = 'simulated failure'): void {
    this.failRules.push({ match, code, stderr })
  }

  clearFaults(): void {
    this.failRules = []
    this.slowMs = 0
    this.frozen = false
  }

  /**
   * Makes images present locally, as if built, pulled or loaded earlier (through the simulated
   * docker's own `load`, so the images list keeps its format).
   */
  addImages(refs: readonly string[]): void {
    if (refs.length === 0) return
    const archive = path.join(this.state, 'docker', 'seed-images.json')
    const images = refs.map((ref) => ({
      ref,
      id: `sha256:${createHash('sha256').update(`seed#${ref}`).digest('hex')}`,
      size: 18_200_000_000,
    }))
    fs.writeFileSync(archive, JSON.stringify({ sim_docker_archive: 1, images }))
    const r = this.runLocal(`docker load -q -i '${archive}' >/dev/null`)
    fs.rmSync(archive, { force: true })
    if (r.code !== 0) throw new Error(`adding images on ${this.name} failed: ${r.stderr}`)
  }

  /** Writes a state switch read by a shim (e.g. `gpu_broken`, `hub_down`, `registry_down`, `pull_fails`). */
  setFlag(name: string, on: boolean): void {
    const f = path.join(this.state, name)
    if (on) fs.writeFileSync(f, '1')
    else fs.rmSync(f, { force: true })
  }

  async close(): Promise<void> {
    for (const c of this.children)
      if (c.pid !== undefined) {
        try {
          process.kill(-c.pid, 'SIGKILL')
        } catch {
          // gone
        }
      }
    await this.down()
  }

  private async closeListeners(): Promise<void> {
    const s = this.server
    const bh = this.blackhole
    this.server = null
    this.blackhole = null
    if (s) await new Promise<void>((r) => s.close(() => r()))
    for (const sock of this.hung) sock.destroy()
    this.hung.clear()
    if (bh) await new Promise<void>((r) => bh.close(() => r()))
  }
}

export interface SimCluster {
  readonly root: string
  readonly node1: SimNode
  readonly node2: SimNode
  /** node1…nodeN in order. */
  readonly nodes: readonly SimNode[]
  /** A node by name; throws for one the sim does not have. */
  node(name: SimNodeName): SimNode
  /** Container state changes on any node (`container` events). */
  readonly events: EventEmitter<{ container: [ContainerEvent] }>
  /** The launcher's upstream (a bare repository). */
  readonly launcherOrigin: string
  /** Adds a commit to the launcher's origin (node1 falls one further behind). */
  pushUpstreamCommit(message: string): void
  /**
   * Makes node1's launcher checkout dirty: each file is written (a tracked one is modified, a new one
   * is untracked); null restores the clean checkout.
   */
  setLauncherDirty(files: readonly string[] | null): void
  /** The commit of each launcher generation on the origin. */
  readonly launcherCommits: Readonly<Record<LauncherGeneration, string>>
  /**
   * Resets node1's launcher checkout to a generation's commit (a clean tree, behind origin). The
   * launcher update (`git pull --ff-only`, then build-and-copy.sh) brings it to origin's head.
   */
  setLauncherGeneration(generation: LauncherGeneration): void
  /** Repos no node's simulated vLLM can load without tensor parallelism ≥ 2 (they run out of memory). */
  setClusterOnlyModels(repos: readonly string[]): void
  authorize(publicKeyLine: string): void
  /** Env for a Tandem daemon pointed at this cluster. */
  daemonEnv(): Record<string, string>
  close(): Promise<void>
}

/** nodeK's defaults: node1 spark-a1 at 192.168.177.11 on 127.0.0.1, node2 spark-b2 at .12 on 127.0.0.2, … */
function defaultNode(k: number): Required<Omit<SimNodeOptions, 'port' | 'hfHome'>> {
  return {
    user: 'spark',
    hostname: `spark-${'abcdefgh'[k - 1] ?? 'x'}${k}`,
    mac: `4c:bb:47:2e:91:${(9 + k).toString(16).padStart(2, '0')}`,
    lanIp: `192.168.177.${10 + k}`,
    address: `127.0.0.${k}`,
    cores: 20,
    ramBytes: 128_849_018_880,
  }
}

/** Each node's name and loopback address, as startSimCluster will give them (for fakes started first). */
export function simNodeAddresses(opts: SimClusterOptions = {}): { name: SimNodeName; address: string }[] {
  return Array.from({ length: simNodeCount(opts.nodeCount) }, (_, i) => {
    const name: SimNodeName = `node${i + 1}`
    const own = name === 'node1' ? opts.node1 : name === 'node2' ? opts.node2 : undefined
    return { name, address: own?.address ?? opts.nodeOptions?.[name]?.address ?? defaultNode(i + 1).address }
  })
}

/** The node count asked for, checked: 2 ≤ n ≤ MAX_SIM_NODES, default 2. */
function simNodeCount(n: number | undefined): number {
  const count = n ?? 2
  if (!Number.isInteger(count) || count < 2 || count > MAX_SIM_NODES)
    throw new Error(`a sim cluster has 2 to ${MAX_SIM_NODES} nodes (asked for ${count})`)
  return count
}

/** What each node knows of the others (for the launcher's workers and rsync): one JSON list. */
function clusterMap(nodes: readonly SimNode[]): string {
  return JSON.stringify(
    nodes.map((n) => ({
      name: n.name,
      address: n.address,
      lanIp: n.opts.lanIp,
      user: n.user,
      port: n.port,
      home: n.home,
      state: n.state,
    })),
  )
}

/**
 * A model already in a node's hub cache: a bundled catalog model with its real config.json and its
 * real weight size in sparse shards; any other repo with a placeholder config and 1 MiB of weights.
 */
function seedCachedModel(hub: string, repo: string): void {
  const known = knownModel(repo)
  writeSnapshot(hub, repo, {
    revision: SIM_REVISION,
    config: known?.config ?? '{"model_type":"sim"}\n',
    weightsBytes: known?.weights_bytes ?? 1024 * 1024,
  })
}

/** node1 and node2 by their own settings, node3… in NODES (`user@host:port`, in order). */
function daemonEnv(list: readonly SimNode[]): Record<string, string> {
  const [n1, n2, ...more] = list as [SimNode, SimNode, ...SimNode[]]
  return {
    NODE1_HOST: n1.address,
    NODE1_USER: n1.user,
    NODE1_SSH_PORT: String(n1.port),
    NODE2_HOST: n2.address,
    NODE2_USER: n2.user,
    NODE2_SSH_PORT: String(n2.port),
    ...(more.length > 0 ? { NODES: more.map((n) => `${n.user}@${n.address}:${n.port}`).join(',') } : {}),
    WOL_BROADCAST: '127.0.0.1',
  }
}

export async function startSimCluster(opts: SimClusterOptions = {}): Promise<SimCluster> {
  const ownRoot = opts.root === undefined
  const root = opts.root ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-sim-'))
  fs.mkdirSync(root, { recursive: true })
  const events = new EventEmitter<{ container: [ContainerEvent] }>()
  const emit = (e: ContainerEvent): void => {
    opts.onContainerEvent?.(e)
    events.emit('container', e)
  }
  const count = simNodeCount(opts.nodeCount)
  const list: SimNode[] = []
  const optionsOf = (name: SimNodeName): SimNodeOptions => ({
    ...(opts.nodeOptions?.[name] ?? {}),
    ...(name === 'node1' ? opts.node1 : name === 'node2' ? opts.node2 : {}),
  })
  const mk = (k: number): SimNode => {
    const name: SimNodeName = `node${k}`
    // node1's peer is node2 (its downloads and image copies go there), every other node's is node1.
    const peer = (): SimNode => list[k === 1 ? 1 : 0] ?? (list[0] as SimNode)
    const o = { ...defaultNode(k), port: 0, ...optionsOf(name) }
    return new SimNode(
      name,
      o,
      root,
      () => ({
        SIM_PEER_HOME: peer().home,
        SIM_PEER_STATE: peer().state,
        SIM_PEER_USER: peer().opts.user,
        SIM_PEER_IP: peer().opts.lanIp,
        // Every node, for the launcher's workers and the simulated rsync between the nodes.
        SIM_CLUSTER: clusterMap(list),
        // What the launcher's node detection finds on the cluster link: every node.
        SIM_NODES: list.map((n) => n.address).join(','),
        // Where each node's container state is, by its cluster-link address (the launcher's workers).
        ...Object.fromEntries(list.map((n) => [`SIM_STATE_AT_${n.address.replace(/\W/g, '_')}`, n.state])),
        SIM_LLM_PORT: String(opts.llmPort ?? 8888),
      }),
      emit,
    )
  }
  for (let k = 1; k <= count; k++) list.push(mk(k))
  const drainAll = (): void => {
    for (const n of list) n.drainEvents()
  }
  for (const n of list) {
    n.port = optionsOf(n.name).port ?? 0
    n.afterCommand = drainAll
  }
  const byName = (name: SimNodeName): SimNode => {
    const n = list.find((x) => x.name === name)
    if (!n) throw new Error(`the sim has no ${name} (it has ${list.length} nodes)`)
    return n
  }
  const node1 = list[0] as SimNode

  const launcherOrigin = path.join(root, 'origin', 'spark-vllm-docker.git')
  const seed = path.join(root, 'origin', 'seed')
  const gitEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Launcher Maintainer',
    GIT_AUTHOR_EMAIL: 'maintainer@example.invalid',
    GIT_COMMITTER_NAME: 'Launcher Maintainer',
    GIT_COMMITTER_EMAIL: 'maintainer@example.invalid',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: root,
  }
  const git = (cwd: string, ...args: string[]): string => {
    const r = spawnSync('git', ['-c', 'init.defaultBranch=main', '-c', 'advice.detachedHead=false', ...args], {
      cwd,
      env: gitEnv,
      encoding: 'utf8',
    })
    if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr}`)
    return r.stdout
  }
  fs.mkdirSync(launcherOrigin, { recursive: true })
  git(launcherOrigin, 'init', '--bare', '-q')
  fs.mkdirSync(seed, { recursive: true })
  git(seed, 'init', '-q')
  const commitAt = (message: string, date: string): string => {
    git(seed, 'add', '-A')
    const r = spawnSync('git', ['commit', '-q', '-m', message], {
      cwd: seed,
      env: { ...gitEnv, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date },
      encoding: 'utf8',
    })
    if (r.status !== 0) throw new Error(`git commit failed: ${r.stderr}`)
    return git(seed, 'rev-parse', 'HEAD').trim()
  }
  // Real history: the early-2026 scripts (no --solo, no recipes/), then the mid-2026 generation
  // with the recipes/ folder, as upstream grew (test/fixtures/launcher/README.md).
  fs.cpSync(path.join(LAUNCHER_SRC, 'hf-download.sh'), path.join(seed, 'hf-download.sh'))
  fs.cpSync(LAUNCHER_EARLY_SRC, seed, { recursive: true })
  fs.writeFileSync(path.join(seed, 'README.md'), '# vLLM Docker for Spark (simulated launcher)\n')
  const earlyCommit = commitAt('warning message about wheel builds', '2026-01-28T13:25:02-08:00')
  fs.cpSync(LAUNCHER_SRC, seed, { recursive: true })
  const midCommit = commitAt(
    'Solo mode, daemon exec dispatch, quoted exec words and recipes',
    '2026-06-15T10:00:00+00:00',
  )
  const launcherCommits: Record<LauncherGeneration, string> = { early: earlyCommit, mid: midCommit }
  git(seed, 'remote', 'add', 'origin', launcherOrigin)
  git(seed, 'push', '-q', 'origin', 'HEAD:main')
  const checkout = path.join(node1.home, 'spark-vllm-docker')
  const launcherNodes = [...new Set<SimNodeName>(['node1', ...(opts.launcherNodes ?? [])])].map(byName)
  for (const n of launcherNodes) {
    git(root, 'clone', '-q', '--branch', 'main', launcherOrigin, path.join(n.home, 'spark-vllm-docker'))
    fs.writeFileSync(
      path.join(n.home, '.gitconfig'),
      '[user]\n\tname = Spark Operator\n\temail = operator@example.invalid\n[safe]\n\tdirectory = *\n[pull]\n\tff = only\n',
    )
  }
  const setLauncherGeneration = (generation: LauncherGeneration): void => {
    git(checkout, 'reset', '-q', '--hard', launcherCommits[generation])
    git(checkout, 'clean', '-fdq')
  }
  const pushUpstreamCommit = (message: string): void => {
    fs.appendFileSync(path.join(seed, 'CHANGELOG.md'), `- ${message}\n`)
    git(seed, 'add', '-A')
    git(seed, 'commit', '-q', '-m', message)
    git(seed, 'push', '-q', 'origin', 'HEAD:main')
  }
  const upstreamMessages = [
    'Add --apply-mod support for model-specific patches',
    'Bump vLLM ref to include the GB10 attention fix',
    'hf-download: copy to peers in parallel',
    'launch-cluster: detect RoCE twins automatically',
  ]
  for (let i = 0; i < (opts.launcherBehind ?? 2); i++)
    pushUpstreamCommit(upstreamMessages[i % upstreamMessages.length] as string)
  if ((opts.launcherGeneration ?? 'mid') !== 'mid') setLauncherGeneration(opts.launcherGeneration ?? 'mid')
  // Every node may be a head: each one's vLLM reads the list.
  const setClusterOnlyModels = (repos: readonly string[]): void => {
    for (const n of list)
      fs.writeFileSync(path.join(n.state, 'cluster_only_models'), repos.map((r) => `${r}\n`).join(''))
  }
  setClusterOnlyModels(opts.clusterOnlyModels ?? [])

  for (const n of list) {
    for (const k of opts.authorizedKeys ?? []) n.authorize(k)
    for (const repo of opts.cachedModels?.[n.name] ?? []) seedCachedModel(n.hubDir, repo)
    // What the node has already built, pulled or been copied: the llm image and the seeded containers' images.
    const seeds = opts.containers?.[n.name] ?? []
    n.addImages([...new Set([...(opts.images?.[n.name] ?? ['vllm-node']), ...seeds.map((c) => c.image)])])
    for (const c of seeds) {
      const args = ['docker', 'run', '-d', '--name', c.name, '--restart', 'unless-stopped']
      if (c.gpu !== false) args.push('--gpus', 'all')
      for (const [h, p] of c.ports ?? []) args.push('-p', `${h}:${p}`)
      for (const v of c.volumes ?? [])
        args.push(
          '-v',
          v.startsWith('$HF_CACHE:')
            ? `${path.dirname(n.hubDir)}${v.slice('$HF_CACHE'.length)}`
            : v.startsWith('~/')
              ? path.join(n.home, v.slice(2))
              : v,
        )
      args.push(c.image, ...(c.command ?? []))
      let cmd = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ') + ' >/dev/null'
      if (c.running === false) cmd += ` && docker stop '${c.name}' >/dev/null`
      const r = n.runLocal(cmd)
      if (r.code !== 0) throw new Error(`seeding container ${c.name} on ${n.name} failed: ${r.stderr}`)
    }
    await n.listen()
  }

  return {
    root,
    node1,
    node2: byName('node2'),
    nodes: list,
    node: byName,
    events,
    launcherOrigin,
    pushUpstreamCommit,
    launcherCommits,
    setLauncherGeneration,
    setClusterOnlyModels,
    setLauncherDirty: (files) => {
      if (files === null) {
        git(checkout, 'checkout', '-q', '--', '.')
        git(checkout, 'clean', '-fdq')
        return
      }
      for (const f of files) {
        fs.mkdirSync(path.dirname(path.join(checkout, f)), { recursive: true })
        fs.appendFileSync(path.join(checkout, f), '# local edit on the node\n')
      }
    },
    authorize: (line) => {
      for (const n of list) n.authorize(line)
    },
    daemonEnv: () => daemonEnv(list),
    close: async () => {
      for (const n of list) await n.close()
      if (ownRoot) fs.rmSync(root, { recursive: true, force: true })
    },
  }
}
