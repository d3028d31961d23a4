import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { HUB_ROOT, hubCacheDir, parseProbe, probeCommand } from '../../../src-main/models/disk'
import {
  copyCommand,
  copyPlan,
  hubInfoCommand,
  MAX_SCRIPT_BYTES,
  parseHubInfo,
  parseScripts,
  readScriptsCommand,
  stagedDownloadCommand,
  type HubInfo,
} from '../../../src-main/models/downloadCommands'
import { PROCESS_GROUP_MARK } from '../../../src-main/ssh/processGroup'

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-dl-unit-'))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

/** Runs a remote command under a plain bash with its own HOME, as a node would. */
function sh(
  command: string,
  env: Record<string, string> = {},
): { code: number | null; stdout: string; stderr: string } {
  const home = fs.mkdtempSync(path.join(scratch, 'home-'))
  const r = spawnSync('bash', ['-c', command], {
    env: { HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: scratch, ...env },
    encoding: 'utf8',
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

const b64 = (s: string): string => Buffer.from(s).toString('base64')

describe('reading the launcher scripts on node1', () => {
  it('prints each script present, bounded, and parses back to the same bytes', () => {
    const dir = fs.mkdtempSync(path.join(scratch, 'launcher-'))
    const text = "#!/usr/bin/env bash\necho 'it''s' \"$@\" `x` $(y) \\\n"
    fs.writeFileSync(path.join(dir, 'hf-download.sh'), text)
    fs.writeFileSync(path.join(dir, 'autodiscover.sh'), 'detect_nodes() { :; }\n')
    fs.writeFileSync(path.join(dir, 'launch-cluster.sh'), 'not staged\n')
    const r = sh(readScriptsCommand(dir))
    expect(r.code).toBe(0)
    const scripts = parseScripts(r.stdout)
    expect([...scripts.keys()].sort()).toEqual(['autodiscover.sh', 'hf-download.sh'])
    expect(Buffer.from(scripts.get('hf-download.sh')!, 'base64').toString()).toBe(text)
  })

  it('fails clearly without the script, and refuses one larger than the bound', () => {
    const empty = fs.mkdtempSync(path.join(scratch, 'launcher-'))
    const missing = sh(readScriptsCommand(empty))
    expect(missing.code).toBe(127)
    expect(missing.stderr).toMatch(/hf-download\.sh not found/)
    expect(() => parseScripts(`@@ hf-download.sh ${MAX_SCRIPT_BYTES + 1}\n`)).toThrow(/larger than/)
    expect(() => parseScripts('')).toThrow(/hf-download\.sh/)
    expect(() => parseScripts(`@@ hf-download.sh 5 ${b64('abc')}\n`)).toThrow(/5 bytes/)
    // Names other than the two staged files are ignored, not written anywhere.
    expect([...parseScripts(`@@ hf-download.sh 3 ${b64('abc')}\n@@ ../evil 3 ${b64('abc')}\n`).keys()]).toEqual([
      'hf-download.sh',
    ])
  })
})

describe('the staged run on a node without the launcher (node2)', () => {
  it('writes the scripts beside each other in a temporary directory, runs there, and removes it', () => {
    const script = [
      'source "$(dirname "$0")/autodiscover.sh"',
      'echo "found=$FOUND args=$# first=$1"',
      'echo "dir=$(basename "$(pwd)")"',
    ].join('\n')
    const scripts = new Map([
      ['hf-download.sh', b64(script)],
      ['autodiscover.sh', b64("FOUND='yes, it'\\''s here'\n")],
    ])
    const before = fs.readdirSync(scratch).filter((f) => f.startsWith('tandem-download.')).length
    const r = sh(stagedDownloadCommand(scripts, 'org/name'))
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines[0]).toMatch(new RegExp(`^${PROCESS_GROUP_MARK}\\d+$`))
    expect(lines).toContain("found=yes, it's here args=1 first=org/name")
    expect(lines.find((l) => l.startsWith('dir='))).toMatch(/^dir=tandem-download\./)
    expect(fs.readdirSync(scratch).filter((f) => f.startsWith('tandem-download.')).length).toBe(before)
  })

  it('passes on the script’s exit status and refuses a repo that is not one', () => {
    const failing = new Map([['hf-download.sh', b64('echo nope >&2; exit 3\n')]])
    const r = sh(stagedDownloadCommand(failing, 'org/name'))
    expect(r.code).toBe(3)
    expect(r.stderr).toContain('nope')
    expect(() => stagedDownloadCommand(failing, "org/a'b")).toThrow(/model repo/)
    expect(() => stagedDownloadCommand(new Map(), 'org/name')).toThrow(/hf-download\.sh/)
  })
})

describe('where a node keeps its hub cache', () => {
  it('reads HF_HOME as the launcher does, else $HOME/.cache/huggingface', () => {
    const dir = fs.mkdtempSync(path.join(scratch, 'launcher-'))
    fs.writeFileSync(path.join(dir, 'hf-download.sh'), 'HUB_PATH="${HF_HOME:-$HOME/.cache/huggingface}/hub"\n')
    const plain = sh(hubInfoCommand(dir))
    const info = parseHubInfo(plain.stdout, 'node1')
    expect(info.hub).toBe(`${info.home}/.cache/huggingface/hub`)
    expect(info.scriptReadsHfHome).toBe(true)
    const set = parseHubInfo(sh(hubInfoCommand(null), { HF_HOME: '/data/hf/' }).stdout, 'node2')
    expect(set.hub).toBe('/data/hf/hub')
    expect(set.scriptReadsHfHome).toBeNull()
  })

  it('refuses a hub path Tandem would not pass to rsync, naming the node', () => {
    for (const bad of ['relative/hub', '/data/my models/hub', '/data/../hub', "/data/it's/hub"])
      expect(() => parseHubInfo(`home=/home/u\nhub=${bad}\n`, 'node2')).toThrow(/node2/)
    expect(() => parseHubInfo('home=/home/u\n', 'node1')).toThrow(/node1/)
  })
})

describe('who copies the weights to node2', () => {
  const info = (hub: string, scriptReadsHfHome: boolean | null = true): HubInfo => ({
    home: '/home/spark',
    hub,
    scriptReadsHfHome,
  })
  const std = '/home/spark/.cache/huggingface/hub'
  const peer = { host: '192.168.177.12', user: 'spark', port: 22 }

  it('the launcher’s own copy when it lands exactly where node2 keeps its cache', () => {
    expect(copyPlan(peer, info(std), info(std))).toEqual({ by: 'script' })
  })

  it('Tandem’s copy when node2’s port, address or hub path differ from what the script assumes', () => {
    expect(copyPlan({ ...peer, port: 2222 }, info(std), info(std))).toMatchObject({ by: 'tandem', why: /port 2222/ })
    expect(copyPlan({ ...peer, host: 'fe80::2' }, info(std), info(std))).toMatchObject({ by: 'tandem' })
    expect(copyPlan(peer, info(std), info('/data/hf/hub'))).toMatchObject({ by: 'tandem', why: /\/data\/hf\/hub/ })
    // An early launcher ignores HF_HOME: its copy reads $HOME's cache while the weights are in HF_HOME's.
    expect(copyPlan(peer, info('/data/hf/hub', false), info('/data/hf/hub'))).toMatchObject({ by: 'tandem' })
  })

  it('names the peer it judges (node3 and further nodes are copied to the same way)', () => {
    expect(copyPlan({ ...peer, port: 2222 }, info(std), info(std), 'node3')).toMatchObject({
      by: 'tandem',
      why: "node3's SSH port is 2222; the launcher's copy uses 22",
    })
    expect(copyPlan(peer, info(std), info('/data/hf/hub'), 'node3')).toMatchObject({ why: /on node3, but node3 keeps/ })
  })
})

describe('Tandem’s copy command', () => {
  const peer = { host: '10.0.0.2', user: 'dgx', port: 2222 }

  it('rsyncs the model folder with node2’s user, port and hub path, every value quoted', () => {
    const cmd = copyCommand('org/name', '/home/spark/.cache/huggingface/hub', peer, '/data/hf/hub')
    expect(cmd).toContain(
      "setsid rsync -av --mkpath --progress -e 'ssh -p 2222 -o BatchMode=yes -o ConnectTimeout=20' -- " +
        "'/home/spark/.cache/huggingface/hub/models--org--name' 'dgx@10.0.0.2:/data/hf/hub/' </dev/null",
    )
    expect(copyCommand('org/name', '/a/hub', { ...peer, host: 'fe80::2' }, '/b/hub')).toContain(
      "'dgx@[fe80::2]:/b/hub/'",
    )
  })

  it('refuses values that are not a repo, a user, a host, a port or a plain absolute path', () => {
    expect(() => copyCommand('org/$(id)', '/a/hub', peer, '/b/hub')).toThrow(/model repo/)
    expect(() => copyCommand('org/name', '/a/hub', { ...peer, user: 'Root;x' }, '/b/hub')).toThrow(/user/)
    expect(() => copyCommand('org/name', '/a/hub', { ...peer, host: 'a b' }, '/b/hub')).toThrow(/host/)
    expect(() => copyCommand('org/name', '/a/hub', { ...peer, port: 0 }, '/b/hub')).toThrow(/port/)
    expect(() => copyCommand('org/name', '/a/hub', peer, 'b/hub')).toThrow(/path/)
    expect(() => copyCommand('org/name', '/a/hub', { ...peer, host: 'a b' }, '/b/hub', 'node3')).toThrow(
      /node3's SSH host/,
    )
  })
})

describe('disk status looks where the launcher writes', () => {
  it('builds the cache directory from HF_HOME, else $HOME, double-quoted for the node’s shell', () => {
    expect(HUB_ROOT).toBe('${HF_HOME:-$HOME/.cache/huggingface}/hub')
    expect(hubCacheDir('Qwen/Qwen3-8B').word).toBe('"${HF_HOME:-$HOME/.cache/huggingface}/hub/models--Qwen--Qwen3-8B"')
  })

  it('finds weights under HF_HOME and reports the resolved hub directory', () => {
    const hf = fs.mkdtempSync(path.join(scratch, 'hf-'))
    fs.mkdirSync(path.join(hf, 'hub/models--org--a/snapshots/abc'), { recursive: true })
    fs.writeFileSync(path.join(hf, 'hub/models--org--a/snapshots/abc/w.safetensors'), Buffer.alloc(4096))
    const r = sh(probeCommand([hubCacheDir('org/a'), hubCacheDir('org/b')]), { HF_HOME: hf })
    expect(r.code).toBe(0)
    const probe = parseProbe(r.stdout, 2)
    expect(probe.hub).toBe(path.join(hf, 'hub'))
    expect(probe.found.map((f) => f.present)).toEqual([true, false])
  })
})
