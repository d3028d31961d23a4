import { z } from 'zod'
import { ModelRepo, Port, SshUser, type NodeName } from '../contract/schemas'
import type { SshTarget } from '../ssh/pool'
import { inOwnProcessGroup } from '../ssh/processGroup'
import { isSafeSegment, remoteDir, shq } from '../ssh/quote'
import { HUB_ROOT, hubDirName } from './disk'

/**
 * The remote commands of a download and the parsers of what they print. The facts about the
 * launcher's hf-download.sh they rely on are in test/fixtures/downloads/README.md: it runs
 * `uvx hf download`, then copies with `rsync … "$model_dir" "${SSH_USER}@${host}:$HUB_PATH/"`, where
 * `$HUB_PATH` is the hub root of the node that runs it and the SSH port is always 22; the current
 * version sources autodiscover.sh from its own directory.
 */

/** The script, and what it needs beside it when it runs outside the launcher checkout. */
export const STAGED_FILES = ['hf-download.sh', 'autodiscover.sh'] as const
/** Upstream's scripts are 8 and 15 kB; a file past this is not the launcher's and is not copied to another node. */
export const MAX_SCRIPT_BYTES = 64 * 1024
/** The launcher's scripts, base64 by file name (read from node1, written on the node that runs them). */
export type LauncherScripts = ReadonlyMap<string, string>

const repoOf = (repo: string): string => {
  const r = ModelRepo.safeParse(repo)
  if (!r.success) throw new Error(`not a model repo: ${JSON.stringify(repo)}`)
  return r.data
}

/**
 * The launcher's script in its checkout, started in its own process group (so cancel can stop it and
 * everything it spawned — the hub CLI, rsync), its group id announced, then waited for. Every value
 * is quoted; the launcher directory is a `$HOME` path or a single-quoted absolute one.
 */
export function downloadCommand(
  launcherDir: string,
  repo: string,
  copyTo: Pick<SshTarget, 'host' | 'user'> | readonly Pick<SshTarget, 'host' | 'user'>[] | null,
): string {
  const dir = remoteDir(launcherDir)
  const args = [repoOf(repo)]
  const peers = copyTo === null ? [] : 'host' in copyTo ? [copyTo] : copyTo
  const users = new Set(peers.map((p) => SshUser.parse(p.user)))
  if (users.size > 1) throw new Error("the launcher's copy logs in to every peer as one user (-u)")
  // The script's -c takes host names until the next flag (commas split them), so the repo goes first.
  const hosts = peers.map((p) => PeerHost.parse(p.host)).join(',')
  if (peers.length > 0) args.push('-c', hosts, '-u', [...users][0] as string, '--copy-parallel')
  return [
    `cd ${dir} || exit 127`,
    `[ -x ./hf-download.sh ] || { echo 'hf-download.sh not found in the launcher checkout (LAUNCHER_DIR)' >&2; exit 127; }`,
    ...inOwnProcessGroup(`./hf-download.sh ${args.map(shq).join(' ')}`),
  ].join('\n')
}

/** node1: prints each staged file present as `@@ <name> <bytes> <base64>` (just `@@ <name> <bytes>` when too large). */
export function readScriptsCommand(launcherDir: string): string {
  return [
    `cd ${remoteDir(launcherDir)} || exit 127`,
    `[ -f hf-download.sh ] || { echo 'hf-download.sh not found in the launcher checkout (LAUNCHER_DIR)' >&2; exit 127; }`,
    `for f in ${STAGED_FILES.map(shq).join(' ')}; do`,
    '  [ -f "$f" ] || continue',
    '  n=$(wc -c < "$f" | tr -d " ")',
    `  if [ "$n" -gt ${MAX_SCRIPT_BYTES} ]; then echo "@@ $f $n"; continue; fi`,
    '  printf \'@@ %s %s \' "$f" "$n"; base64 -w0 < "$f"; echo',
    'done',
  ].join('\n')
}

/** What readScriptsCommand printed → the scripts, each checked against its announced size. */
export function parseScripts(stdout: string): LauncherScripts {
  const scripts = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    const m = /^@@ (\S+) (\d+)(?: ([A-Za-z0-9+/=]*))?$/.exec(line.trim())
    if (!m || !(STAGED_FILES as readonly string[]).includes(m[1] as string)) continue
    const [name, size] = [m[1] as string, Number(m[2])]
    if (size > MAX_SCRIPT_BYTES)
      throw new Error(
        `node1's launcher ${name} is ${size} bytes, larger than the ${MAX_SCRIPT_BYTES} bytes Tandem copies`,
      )
    const bytes = Buffer.from(m[3] ?? '', 'base64')
    if (bytes.length !== size)
      throw new Error(`node1's launcher ${name} came back as ${bytes.length} of its ${size} bytes`)
    scripts.set(name, bytes.toString('base64'))
  }
  if (!scripts.has('hf-download.sh')) throw new Error("could not read hf-download.sh from node1's launcher checkout")
  return scripts
}

/**
 * For a node without the launcher (node2, node3…): node1's scripts written side by side into a temporary
 * directory (the current script sources autodiscover.sh from its own directory), run there as in the
 * checkout, then removed. The bytes travel as base64 inside single quotes: no quoting to get wrong.
 */
export function stagedDownloadCommand(scripts: LauncherScripts, repo: string): string {
  if (!scripts.has('hf-download.sh')) throw new Error('hf-download.sh is missing from the launcher scripts')
  const writes = [...scripts].map(([name, b64]) => {
    if (!(STAGED_FILES as readonly string[]).includes(name) || !/^[A-Za-z0-9+/=]*$/.test(b64))
      throw new Error(`not a launcher script: ${JSON.stringify(name)}`)
    return `printf '%s' ${shq(b64)} | base64 -d > "$d/"${shq(name)} || exit 1`
  })
  return [
    // Staging directories a dropped connection left behind: a day old, this user's own.
    'find "${TMPDIR:-/tmp}" -maxdepth 1 -name \'tandem-download.*\' -user "$(id -u)" -mmin +1440 -exec rm -rf {} + 2>/dev/null',
    'd=$(mktemp -d "${TMPDIR:-/tmp}/tandem-download.XXXXXX") || exit 1',
    `trap 'rm -rf -- "$d"' EXIT`,
    ...writes,
    'cd "$d" || exit 1',
    ...inOwnProcessGroup(`bash ./hf-download.sh ${shq(repoOf(repo))}`),
  ].join('\n')
}

/** A remote absolute path Tandem passes to rsync: plain segments only, nothing a shell or rsync reads specially. */
export const HubPath = z
  .string()
  .max(4096)
  .transform((p) => p.replace(/\/+/g, '/').replace(/(.)\/$/, '$1'))
  .refine((p) => p.startsWith('/') && p.split('/').slice(1).every(isSafeSegment), {
    message: 'a plain absolute path (letters, digits, . _ -)',
  })

/** A host as the config allows it (name, IPv4 or IPv6). */
const PeerHost = z.string().regex(/^[A-Za-z0-9._:-]+$/, 'a host name or address')
const PeerTarget = z.object({ host: PeerHost, user: SshUser, port: Port })

/** Where a node keeps its hub cache, as its own shell sees it. */
export interface HubInfo {
  home: string
  hub: string
  /** Whether the launcher's script (node1) reads HF_HOME; null where there is no checkout. */
  scriptReadsHfHome: boolean | null
}

/** Prints the node's `$HOME` and hub root (and, with the launcher directory, whether its script reads HF_HOME). */
export function hubInfoCommand(launcherDir: string | null): string {
  const lines = ['printf \'home=%s\\n\' "$HOME"', `printf 'hub=%s\\n' "${HUB_ROOT}"`]
  if (launcherDir !== null) {
    const script = `${remoteDir(launcherDir)}/hf-download.sh`
    lines.push(`if grep -q HF_HOME ${script} 2>/dev/null; then echo script=hf_home; else echo script=home; fi`)
  }
  return lines.join('\n')
}

export function parseHubInfo(stdout: string, node: NodeName): HubInfo {
  const value = (key: string): string | undefined =>
    stdout
      .split('\n')
      .find((l) => l.startsWith(`${key}=`))
      ?.slice(key.length + 1)
  const home = HubPath.safeParse(value('home') ?? '')
  const hub = HubPath.safeParse(value('hub') ?? '')
  if (!home.success || !hub.success)
    throw new Error(
      `${node}'s hub cache path ${JSON.stringify(value('hub') ?? '')} (from HF_HOME or $HOME) is not a plain absolute path; Tandem will not pass it to rsync`,
    )
  const script = value('script')
  return { home: home.data, hub: hub.data, scriptReadsHfHome: script === undefined ? null : script === 'hf_home' }
}

/** Who copies the weights to a peer: the launcher's own -c, or Tandem with the peer's settings, and why. */
export type CopyPlan = { by: 'script' } | { by: 'tandem'; why: string }

/**
 * The launcher's copy goes to `user@host:<node1's hub root>/` over port 22, `host` being the peer's
 * SSH host. It is used only when that is exactly where the peer keeps its cache and Tandem reaches
 * the peer; otherwise Tandem copies itself.
 */
export function copyPlan(peer: SshTarget, node1: HubInfo, to: HubInfo, name: NodeName = 'node2'): CopyPlan {
  if (peer.port !== 22) return { by: 'tandem', why: `${name}'s SSH port is ${peer.port}; the launcher's copy uses 22` }
  if (peer.host.includes(':'))
    return { by: 'tandem', why: `${name}'s address is IPv6; the launcher's copy cannot name it` }
  if (node1.hub !== to.hub)
    return {
      by: 'tandem',
      why: `the launcher's copy writes to node1's hub path (${node1.hub}) on ${name}, but ${name} keeps its hub at ${to.hub}`,
    }
  if (node1.scriptReadsHfHome === false && node1.hub !== `${node1.home}/.cache/huggingface/hub`)
    return { by: 'tandem', why: 'this launcher version ignores HF_HOME when it copies' }
  return { by: 'script' }
}

/** Tandem's copy: from node1, rsync the model folder to a peer as its user, on its port, into its hub. */
export function copyCommand(
  repo: string,
  fromHub: string,
  peer: SshTarget,
  toHub: string,
  name: NodeName = 'node2',
): string {
  const dir = hubDirName(repoOf(repo))
  const to = PeerTarget.safeParse(peer)
  if (!to.success) {
    const field = String(to.error.issues[0]?.path[0] ?? 'host') as keyof SshTarget
    throw new Error(`${name}'s SSH ${field} is not valid: ${JSON.stringify(peer[field])}`)
  }
  const [from, into] = [HubPath.safeParse(fromHub), HubPath.safeParse(toHub)]
  if (!from.success || !into.success) throw new Error('the hub cache path is not a plain absolute path')
  const host = to.data.host.includes(':') ? `[${to.data.host}]` : to.data.host
  // BatchMode: a missing key fails at once instead of waiting for a password nobody types.
  const rsh = `ssh -p ${to.data.port} -o BatchMode=yes -o ConnectTimeout=20`
  const call = `rsync -av --mkpath --progress -e ${shq(rsh)} -- ${shq(`${from.data}/${dir}`)} ${shq(`${to.data.user}@${host}:${into.data}/`)}`
  return inOwnProcessGroup(call).join('\n')
}
