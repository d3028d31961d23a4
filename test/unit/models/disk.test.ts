import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  hubCacheDir,
  nodesFor,
  parseProbe,
  probeCommand,
  probedNodes,
  weightsLocation,
} from '../../../src-main/models/disk'
import { downloadCommand, resolveTarget, targetNodes } from '../../../src-main/models/downloads'
import type { ModelDef } from '../../../src-main/contract/models'

const def = (d: Partial<ModelDef>): ModelDef =>
  ({ key: 'k', name: 'k', engine_args: [], mode: 'solo', ...d }) as ModelDef

describe('weights locations', () => {
  it('builds the hub cache directory in double quotes from validated segments', () => {
    expect(hubCacheDir('Qwen/Qwen3-8B').word).toBe('"${HF_HOME:-$HOME/.cache/huggingface}/hub/models--Qwen--Qwen3-8B"')
    for (const bad of ['a/b"c', 'a/$(id)', 'a/b`c`', 'a/b c', 'a/..', 'abc', 'a--b/c'])
      expect(() => hubCacheDir(bad)).toThrow()
  })

  it('quotes a local path with single quotes and probes solo models on node1, others on both', () => {
    expect(weightsLocation(def({ local_path: '/data/m' })).word).toBe("'/data/m'")
    expect(nodesFor(def({ mode: 'solo' }))).toEqual(['node1'])
    expect(nodesFor(def({ mode: 'both' }))).toEqual(['node1', 'node2'])
    expect(nodesFor(def({ mode: 'cluster' }))).toEqual(['node1', 'node2'])
  })

  it('probes every configured node past node2 too, and only its own nodes on a two-node install', () => {
    expect(probedNodes(def({ mode: 'solo' }), ['node1', 'node2'])).toEqual(['node1'])
    expect(probedNodes(def({ mode: 'cluster' }), ['node1', 'node2'])).toEqual(['node1', 'node2'])
    expect(probedNodes(def({ mode: 'solo' }), ['node1', 'node2', 'node3', 'node4'])).toEqual([
      'node1',
      'node3',
      'node4',
    ])
    expect(probedNodes(def({ mode: 'both' }), ['node1', 'node2', 'node3'])).toEqual(['node1', 'node2', 'node3'])
  })
})

describe('the probe', () => {
  it('runs under a plain POSIX sh, sizes what is present and maps duplicates back by path', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-probe-'))
    const snap = path.join(home, '.cache/huggingface/hub/models--org--a/snapshots/abc')
    fs.mkdirSync(snap, { recursive: true })
    fs.writeFileSync(path.join(snap, 'w.safetensors'), Buffer.alloc(50_000))
    // A cache directory without a snapshot is an interrupted download: not present.
    fs.mkdirSync(path.join(home, '.cache/huggingface/hub/models--org--partial/blobs'), { recursive: true })
    const local = path.join(home, 'local')
    fs.mkdirSync(local)
    const locs = [
      hubCacheDir('org/a'),
      hubCacheDir('org/missing'),
      hubCacheDir('org/a'),
      hubCacheDir('org/partial'),
      weightsLocation(def({ local_path: local })),
      weightsLocation(def({ local_path: path.join(home, 'nope') })),
    ]
    const r = spawnSync('sh', ['-c', probeCommand(locs)], {
      env: { HOME: home, PATH: process.env.PATH },
      encoding: 'utf8',
    })
    expect(r.status).toBe(0)
    const { found, hub } = parseProbe(r.stdout, locs.length)
    expect(hub).toBe(path.join(home, '.cache/huggingface/hub'))
    expect(found.map((f) => f.present)).toEqual([true, false, true, false, true, false])
    expect(found[0]!.bytes).toBeGreaterThanOrEqual(50_000)
    expect(found[2]!.bytes).toBe(found[0]!.bytes)
    expect(found[4]!.bytes).not.toBeNull()
    fs.rmSync(home, { recursive: true, force: true })
  })

  it('ignores lines that are not the probe’s and indices out of range', () => {
    const { found, hub } = parseProbe('P 0 /x\nP 9 /y\nnoise\n123\t/x\n77\t/y\n', 2)
    expect(hub).toBeNull()
    expect(found).toEqual([
      { present: true, bytes: 123 },
      { present: false, bytes: null },
    ])
  })
})

describe('the download command', () => {
  const peer = { host: '192.168.177.12', user: 'spark', port: 22 }

  it('puts the repo before -c (the script takes hosts until the next flag) and quotes every value', () => {
    const cmd = downloadCommand('$HOME/spark-vllm-docker', 'org/name', peer)
    expect(cmd).toContain('cd "$HOME/spark-vllm-docker" || exit 127')
    expect(cmd).toContain("setsid ./hf-download.sh 'org/name' '-c' '192.168.177.12' '-u' 'spark' '--copy-parallel'")
    expect(downloadCommand('/opt/launcher', 'org/name', null)).toContain("cd '/opt/launcher'")
  })

  it('names several peers in one comma-separated -c word, as the script splits them', () => {
    const node3 = { host: '192.168.177.13', user: 'spark', port: 22 }
    expect(downloadCommand('$HOME/spark-vllm-docker', 'org/name', [peer, node3])).toContain(
      "setsid ./hf-download.sh 'org/name' '-c' '192.168.177.12,192.168.177.13' '-u' 'spark' '--copy-parallel'",
    )
    // The script has one -u for every peer.
    expect(() => downloadCommand('/opt/l', 'org/name', [peer, { ...node3, user: 'dgx' }])).toThrow(/one user/)
  })

  it('solo means node1, cluster means both, an explicit target wins', () => {
    expect(resolveTarget({ repo: 'a/b' })).toBe('node1')
    expect(resolveTarget({ repo: 'a/b', mode: 'solo' })).toBe('node1')
    expect(resolveTarget({ repo: 'a/b', mode: 'cluster' })).toBe('both')
    expect(resolveTarget({ repo: 'a/b', mode: 'cluster', target: 'node2' })).toBe('node2')
    expect(resolveTarget({ repo: 'a/b', mode: 'solo', target: 'node3' })).toBe('node3')
  })

  it('a target names its nodes: both is node1+node2, all every configured node, a node itself', () => {
    const three = ['node1', 'node2', 'node3']
    expect(targetNodes('both', three)).toEqual(['node1', 'node2'])
    expect(targetNodes('all', three)).toEqual(three)
    expect(targetNodes('all', ['node1', 'node2'])).toEqual(['node1', 'node2'])
    expect(targetNodes('node3', three)).toEqual(['node3'])
  })
})
