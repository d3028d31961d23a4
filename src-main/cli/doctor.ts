import { nodeNames, type Config } from '../config/load'
import type { NodeName } from '../contract/schemas'
import type { ServiceDirectory, RoleName } from '../cluster/serviceDirectory'
import { httpHealth } from '../services/healthCheck'
import { PROBE_TIMEOUT_MS, SshError, type SshPool, type SshTarget } from '../ssh/pool'
import { remoteDir } from '../ssh/quote'

/** One line of `tandem doctor`: what was checked, what was found, and what to do when it failed. */
export interface DoctorCheck {
  /** A node (node1, node2, node3, …), llm, asr or tts. */
  readonly subject: string
  readonly check: string
  readonly status: 'ok' | 'fail' | 'skip'
  readonly detail: string
  /** What to do about a failure; null when it passed or was skipped. */
  readonly fix: string | null
}

export interface DoctorDeps {
  readonly config: Config
  readonly pool: SshPool
  readonly services: ServiceDirectory
  readonly signal?: AbortSignal
}

/** The scripts of the launcher checkout that Tandem runs (DESIGN.md, The launcher). */
export const LAUNCHER_SCRIPTS = ['launch-cluster.sh', 'hf-download.sh', 'build-and-copy.sh'] as const

/** Every check for every configured node and service, nodes in parallel. */
export async function runDoctor(deps: DoctorDeps): Promise<DoctorCheck[]> {
  const [nodeChecks, serviceChecks] = await Promise.all([
    Promise.all(nodeNames(deps.config).map((node) => checkNode(deps, node))),
    Promise.all((['llm', 'asr', 'tts'] as const).map((role) => checkService(deps, role))),
  ])
  return [...nodeChecks.flat(), ...serviceChecks]
}

/** Exit status of `tandem doctor`: 1 when any check failed. */
export function doctorExitCode(checks: readonly DoctorCheck[]): number {
  return checks.some((c) => c.status === 'fail') ? 1 : 0
}

/** One line per check: `[ok]`, `[FAIL]` or `[skip]`, the subject, the check, the finding and the fix. */
export function formatDoctorLine(c: DoctorCheck): string {
  const mark = c.status === 'ok' ? '[ok]  ' : c.status === 'fail' ? '[FAIL]' : '[skip]'
  return `${mark} ${c.subject.padEnd(5)} ${c.check}: ${c.detail}${c.fix ? ` -> fix: ${c.fix}` : ''}`
}

const ok = (subject: string, check: string, detail: string): DoctorCheck => ({
  subject,
  check,
  status: 'ok',
  detail,
  fix: null,
})
const fail = (subject: string, check: string, detail: string, fix: string): DoctorCheck => ({
  subject,
  check,
  status: 'fail',
  detail,
  fix,
})
const skip = (subject: string, check: string, detail: string): DoctorCheck => ({
  subject,
  check,
  status: 'skip',
  detail,
  fix: null,
})

/** The checks after "reachable", skipped together when the node cannot be reached. */
function nodeCheckNames(node: NodeName): string[] {
  return ['docker', 'nvidia-smi', ...(node === 'node1' ? ['launcher', 'launcher scripts'] : [])]
}

async function checkNode(deps: DoctorDeps, node: NodeName): Promise<DoctorCheck[]> {
  const target = deps.config.nodes[node] ?? null
  if (target === null) return [notConfigured(node)]
  const where = `${target.user}@${target.host}:${target.port}`
  const launcherDir = deps.config.llm.launcherDir
  let script: string
  try {
    script = probeScript(node === 'node1' ? launcherDir : null)
  } catch (err) {
    return [fail(node, 'launcher', (err as Error).message, 'set LAUNCHER_DIR to an absolute path or $HOME/<path>')]
  }
  let out: string
  try {
    const res = await deps.pool.exec(target, script, { timeoutMs: PROBE_TIMEOUT_MS, fresh: true, signal: deps.signal })
    out = res.stdout
  } catch (err) {
    return [
      ...connectFailure(node, where, target, err),
      ...nodeCheckNames(node).map((c) => skip(node, c, 'not checked: no SSH session')),
    ]
  }
  const sections = splitSections(out)
  return [
    ok(node, 'reachable', `ssh ${where}${sections.hostname ? ` (${sections.hostname.trim()})` : ''}`),
    ok(node, 'host key', 'trusted (known_hosts.json)'),
    ok(node, 'ssh key', "Tandem's key is accepted"),
    dockerCheck(node, target, sections.docker ?? ''),
    gpuCheck(node, sections.gpu ?? ''),
    ...(node === 'node1' ? launcherChecks(launcherDir, sections.launcher ?? '') : []),
  ]
}

/** node1 and node2 have their own settings; node3… are entries of NODES. */
const ownSettings = (node: NodeName): boolean => node === 'node1' || node === 'node2'

/** Where the node's host is set, in words for a fix. */
function hostSetting(node: NodeName): string {
  return ownSettings(node) ? `${node.toUpperCase()}_HOST` : 'its entry in NODES'
}

function notConfigured(node: NodeName): DoctorCheck {
  const upper = node.toUpperCase()
  if (!ownSettings(node))
    return fail(
      node,
      'configured',
      'its entry in NODES was skipped as malformed (see the configuration warnings)',
      'correct the entry in NODES: user@host or user@host:port, in order from node3',
    )
  return fail(
    node,
    'configured',
    `${upper}_HOST and ${upper}_USER are not set`,
    `set ${upper}_HOST and ${upper}_USER (settings file, environment or the StartOS configuration action)`,
  )
}

/** What a failed SSH session says about reachability, the host key and Tandem's key. */
function connectFailure(node: NodeName, where: string, target: SshTarget, err: unknown): DoctorCheck[] {
  const message = err instanceof Error ? err.message : String(err)
  if (!(err instanceof SshError) || err.kind === 'unreachable' || err.kind === 'timeout')
    return [
      fail(
        node,
        'reachable',
        `ssh ${where}: ${message}`,
        `check that the node is powered on and on the network, that ${hostSetting(node)} and the SSH port are right, and that sshd runs (Wake-on-LAN from the Cluster view if it sleeps)`,
      ),
      skip(node, 'host key', 'not checked: node unreachable'),
      skip(node, 'ssh key', 'not checked: node unreachable'),
    ]
  if (err.kind === 'host_key_changed' || err.kind === 'host_key_unconfirmed')
    return [
      ok(node, 'reachable', `ssh ${where} answers`),
      fail(
        node,
        'host key',
        message,
        `if the node was reinstalled, trust its new key (${err.presentedFingerprint ?? 'see the Cluster view'}) in the Cluster view; otherwise find out who answers at ${target.host}`,
      ),
      skip(node, 'ssh key', 'not checked: host key not trusted'),
    ]
  if (err.kind === 'auth')
    return [
      ok(node, 'reachable', `ssh ${where} answers`),
      ok(node, 'host key', 'trusted (known_hosts.json)'),
      fail(
        node,
        'ssh key',
        message,
        `authorize Tandem's key on ${node}: run the command \`tandem ssh-key\` prints for it`,
      ),
    ]
  return [
    fail(
      node,
      'reachable',
      `ssh ${where}: ${message}`,
      'run `tandem doctor` again; if it persists, check sshd on the node',
    ),
    skip(node, 'host key', 'not checked'),
    skip(node, 'ssh key', 'not checked'),
  ]
}

/**
 * One remote command for all the node's checks, each section introduced by an `@@name` line so a
 * missing tool shows as a finding instead of failing the whole probe.
 */
export function probeScript(launcherDir: string | null): string {
  const lines = [
    "echo '@@hostname'; hostname 2>/dev/null",
    // `docker ps` needs the daemon socket: it fails when the user is not allowed to use docker.
    "echo '@@docker'; if command -v docker >/dev/null 2>&1; then if err=$(docker ps -q 2>&1 >/dev/null); then echo 'docker-ok'; else echo 'docker-denied'; printf '%s\\n' \"$err\" | head -c 400; echo; fi; else echo 'docker-missing'; fi",
    "echo '@@gpu'; if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>&1 | head -n 4; echo \"exit=${PIPESTATUS[0]}\"; else echo 'nvidia-smi-missing'; fi",
  ]
  if (launcherDir !== null) {
    const scripts = LAUNCHER_SCRIPTS.join(' ')
    lines.push(
      `echo '@@launcher'; if cd ${remoteDir(launcherDir)} 2>/dev/null; then echo "dir=$PWD"; for s in ${scripts}; do if [ -x "$s" ]; then echo "ok $s"; elif [ -e "$s" ]; then echo "noexec $s"; else echo "missing $s"; fi; done; else echo 'dir-missing'; fi`,
    )
  }
  return lines.join('\n')
}

function splitSections(out: string): Record<string, string> {
  const sections: Record<string, string> = {}
  let current: string | null = null
  for (const line of out.split('\n')) {
    const m = /^@@([a-z]+)$/.exec(line)
    if (m) {
      current = m[1] as string
      sections[current] = ''
    } else if (current !== null) sections[current] += `${line}\n`
  }
  return sections
}

function dockerCheck(node: NodeName, target: SshTarget, text: string): DoctorCheck {
  const lines = text.split('\n').map((l) => l.trim())
  if (lines.includes('docker-ok')) return ok(node, 'docker', `docker answers for ${target.user}`)
  if (lines.includes('docker-missing'))
    return fail(
      node,
      'docker',
      'docker is not installed',
      `install Docker on ${node} (and the NVIDIA container toolkit)`,
    )
  const why = lines.filter((l) => l !== '' && l !== 'docker-denied').join(' ') || 'docker ps failed'
  if (/permission denied/i.test(why))
    return fail(
      node,
      'docker',
      `${target.user} may not use docker: ${why}`,
      `on ${node}: sudo usermod -aG docker ${target.user}, then start a new SSH session`,
    )
  return fail(node, 'docker', why, `start the Docker daemon on ${node} (sudo systemctl start docker)`)
}

function gpuCheck(node: NodeName, text: string): DoctorCheck {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
  if (lines.includes('nvidia-smi-missing'))
    return fail(node, 'nvidia-smi', 'nvidia-smi is not installed', `install the NVIDIA driver on ${node}`)
  const exit = lines.find((l) => l.startsWith('exit='))
  const rows = lines.filter((l) => !l.startsWith('exit='))
  if (exit !== 'exit=0' || rows.length === 0)
    return fail(
      node,
      'nvidia-smi',
      `nvidia-smi did not answer: ${rows.join(' ').slice(0, 300) || exit || 'no output'}`,
      `check the NVIDIA driver on ${node} (nvidia-smi should list the GPU; a reboot after a driver update often helps)`,
    )
  const [name, memory] = (rows[0] as string).split(',').map((s) => s.trim())
  const unified = memory === undefined || !/^\d+(\.\d+)?$/.test(memory)
  return ok(
    node,
    'nvidia-smi',
    unified ? `${name ?? 'GPU'}, unified memory` : `${name ?? 'GPU'}, ${memory} MiB dedicated memory (not unified)`,
  )
}

function launcherChecks(launcherDir: string, text: string): DoctorCheck[] {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
  if (lines.includes('dir-missing') || lines.length === 0)
    return [
      fail(
        'node1',
        'launcher',
        `no launcher checkout at ${launcherDir}`,
        `clone the launcher on node1 into ${launcherDir}, or set LAUNCHER_DIR to where it is`,
      ),
      skip('node1', 'launcher scripts', 'not checked: no checkout'),
    ]
  const dir = lines.find((l) => l.startsWith('dir='))?.slice(4) ?? launcherDir
  const missing = lines.filter((l) => l.startsWith('missing ')).map((l) => l.slice(8))
  const noexec = lines.filter((l) => l.startsWith('noexec ')).map((l) => l.slice(7))
  const found = ok('node1', 'launcher', `checkout at ${dir}`)
  if (missing.length === 0 && noexec.length === 0)
    return [found, ok('node1', 'launcher scripts', LAUNCHER_SCRIPTS.join(', '))]
  const problems = [...missing.map((s) => `${s} missing`), ...noexec.map((s) => `${s} not executable`)].join(', ')
  const fixes = [
    ...(missing.length > 0
      ? [`restore the checkout (cd ${dir} && git status && git checkout -- ${missing.join(' ')})`]
      : []),
    ...(noexec.length > 0 ? [`chmod +x ${noexec.join(' ')} in ${dir}`] : []),
  ].join('; ')
  return [found, fail('node1', 'launcher scripts', problems, fixes)]
}

const ROLE_FIX: Record<RoleName, string> = {
  llm: 'load a model from the Models view (or check LLM_PORT and that the llm container runs on node1)',
  asr: 'start asr from the Services view (or check ASR_HOST, ASR_PORT and the asr container)',
  tts: 'start tts from the Services view (or check TTS_HOST, TTS_PORT and the tts container)',
}

async function checkService(deps: DoctorDeps, role: RoleName): Promise<DoctorCheck> {
  const loc = deps.services.role(role)
  const check = role === 'llm' ? `llm port ${loc.port}` : 'health'
  if (loc.baseUrl === null) return fail(role, check, 'not configured', loc.hint ?? `configure ${role}`)
  const h = await httpHealth(loc.baseUrl, deps.signal)
  if (h.ok) return ok(role, check, `${loc.baseUrl}/health answers${h.model ? ` (model ${h.model})` : ''}`)
  return fail(role, check, `${loc.baseUrl}/health: ${h.error ?? 'no answer'}`, ROLE_FIX[role])
}
