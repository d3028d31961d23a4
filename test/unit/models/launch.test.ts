import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import type { ModelDef } from '../../../src-main/contract/models'
import { createLogger } from '../../../src-main/lib/logger'
import { ModelCatalog } from '../../../src-main/models/catalog'
import {
  bindMountArgs,
  launchPlan,
  LaunchRefused,
  layoutArgs,
  parallelism,
  serveCommand,
  servedName,
  stopCommand,
  nodesForMode,
  type PlacementNodes,
} from '../../../src-main/models/launch'
import { parseProbe } from '../../../src-main/models/launcherCapabilities'
import { VALIDATE_SCRIPT } from '../../../src-main/models/validate'
import type { CatalogEntry } from '../../../src-main/models/types'

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-launch-'))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))
const config = loadConfig({ env: { DATA_DIR: dataDir, LLM_PORT: '8123', LLM_CONTAINER: 'vllm_node' } })

/** The launcher as the probe reads it, from the recorded probe of each generation (test/fixtures/launcher). */
function launcher(generation: 'early-2026' | 'mid-2026' | 'late-2026') {
  const file = new URL(`../../fixtures/launcher/probe-${generation}.txt`, import.meta.url)
  return parseProbe(fs.readFileSync(file, 'utf8'), '$HOME/spark-vllm-docker', 0)
}
const MID = launcher('mid-2026')
/** Solo on node1, and node1+node2 on a two-node cluster (no `-n`: the launcher finds them). */
const SOLO: PlacementNodes = { nodes: ['node1'], addresses: null }
const PAIR: PlacementNodes = { nodes: ['node1', 'node2'], addresses: null }

function entry(def: Partial<ModelDef> & { key: string }, launchArgs: string[] = []): CatalogEntry {
  return {
    def: { name: def.key, engine_args: launchArgs, mode: 'solo', ...def } as ModelDef,
    tags: ['custom'],
    bundled: false,
    effectiveKnobs: {},
    launchArgs,
  }
}

/** What bash hands the launcher as its argv when it runs the command (after `cd … &&`). */
function argvOf(command: string): string[] {
  const launcher = command.replace(/^cd .*? && /, '').replace('./launch-cluster.sh', 'printf "%s\\n"')
  const r = spawnSync('bash', ['-c', launcher], { encoding: 'utf8' })
  return r.stdout.split('\n').slice(0, -1)
}

describe('the serve command and the launcher command a swap runs', () => {
  it('serves the repo on 0.0.0.0 and the llm port, then the engine args, then the chat template', () => {
    const e = entry({ key: 'm', repo: 'org/model', chat_template: '/templates/chat.jinja' }, [
      '--max-model-len',
      '32768',
      '--speculative-config',
      '{"method":"mtp","num_speculative_tokens":2}',
    ])
    expect(serveCommand(e, 8123)).toEqual([
      'vllm',
      'serve',
      'org/model',
      '--host',
      '0.0.0.0',
      '--port',
      '8123',
      '--max-model-len',
      '32768',
      '--speculative-config',
      '{"method":"mtp","num_speculative_tokens":2}',
      '--chat-template',
      '/templates/chat.jinja',
    ])
  })

  it("drops an entry's own --host and --port so the engine listens where Tandem looks", () => {
    const e = entry({ key: 'm', repo: 'org/model' }, ['--port=9000', '--host', '127.0.0.1', '--max_num_seqs', '8'])
    expect(serveCommand(e, 8123).slice(2)).toEqual([
      'org/model',
      '--host',
      '0.0.0.0',
      '--port',
      '8123',
      '--max_num_seqs',
      '8',
    ])
  })

  it('solo: --solo, the image, the container name, -d and exec with every value as one word', () => {
    const e = entry({ key: 'm', repo: 'org/model' }, ['--speculative-config', `{"a":"it's $(id)"}`])
    const plan = launchPlan(config, e, SOLO, MID)
    expect(plan.launchCmd.startsWith('cd "$HOME/spark-vllm-docker" && ./launch-cluster.sh ')).toBe(true)
    expect(argvOf(plan.launchCmd)).toEqual([
      '--solo',
      '-t',
      'vllm-node',
      '--name',
      'vllm_node',
      '-d',
      'exec',
      ...plan.cmdArgs,
    ])
    // The gateway's own arguments (gatewayEngineArgs) follow the entry's.
    expect(plan.cmdArgs.slice(-5)).toEqual([
      `{"a":"it's $(id)"}`,
      '--served-model-name',
      'org/model',
      'm',
      '--enable-force-include-usage',
    ])
    expect(plan.extraDockerArgs).toBeNull()
    expect(plan.served).toBe('org/model')
  })

  it('cluster: no --solo; stop names the container and the mode', () => {
    const plan = launchPlan(config, entry({ key: 'm', repo: 'org/model', mode: 'cluster' }), PAIR, MID)
    expect(argvOf(plan.launchCmd).slice(0, 6)).toEqual(['-t', 'vllm-node', '--name', 'vllm_node', '-d', 'exec'])
    expect(argvOf(stopCommand(config, SOLO, MID))).toEqual(['--solo', '--name', 'vllm_node', 'stop'])
    expect(argvOf(stopCommand(config, PAIR, MID))).toEqual(['--name', 'vllm_node', 'stop'])
  })

  it('a local model is bind-mounted at the same path through VLLM_SPARK_EXTRA_DOCKER_ARGS and served from it', () => {
    const e = entry({ key: 'loc', local_path: '/data/models/my-model', chat_template: 'tpl/chat.jinja' })
    const plan = launchPlan(config, e, SOLO, MID)
    expect(plan.cmdArgs.slice(0, 3)).toEqual(['vllm', 'serve', '/data/models/my-model'])
    expect(plan.cmdArgs.slice(-2)).toEqual(['--chat-template', '/data/models/my-model/tpl/chat.jinja'])
    expect(plan.extraDockerArgs).toBe('-v /data/models/my-model:/data/models/my-model')
    expect(plan.launchCmd).toContain(
      `VLLM_SPARK_EXTRA_DOCKER_ARGS='-v /data/models/my-model:/data/models/my-model' ./launch-cluster.sh`,
    )
    // The script splits the value unquoted: exactly two words, the mount unchanged.
    const split = spawnSync('bash', ['-c', `X=${"'"}${plan.extraDockerArgs}${"'"}; printf '%s\\n' $X`], {
      encoding: 'utf8',
    })
    expect(split.stdout).toBe('-v\n/data/models/my-model:/data/models/my-model\n')
    expect(plan.served).toBe('/data/models/my-model')
  })

  it('refuses a local path that the unquoted expansion could split, glob or re-parse', () => {
    for (const bad of [
      '/data/my model',
      '/data/*',
      "/data/a'b",
      '/data/a:b',
      'relative/path',
      '/data/../etc',
      '/data/$(id)',
    ])
      expect(() => bindMountArgs(bad), bad).toThrow(/not launchable/)
  })

  it('the served name follows --served-model-name', () => {
    expect(servedName(entry({ key: 'm', repo: 'org/model' }, ['--served-model-name', 'short']))).toBe('short')
    expect(servedName(entry({ key: 'm', repo: 'org/model' }, ['--served_model_name=alias']))).toBe('alias')
    expect(servedName(entry({ key: 'm', repo: 'org/model' }))).toBe('org/model')
  })
})

describe("the sim's stand-in for vLLM's argument parser", () => {
  const standIn = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'sim', 'container', 'python')
  const parse = (args: readonly string[]) => {
    const r = spawnSync('python3', ['-c', VALIDATE_SCRIPT, ...args], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: standIn },
    })
    const line = r.stdout.split('\n').find((l) => l.startsWith('TANDEM_VALIDATE '))
    return JSON.parse((line ?? 'TANDEM_VALIDATE null').slice(16)) as { ok: boolean; error: string | null }
  }

  it('accepts the exact serve arguments of every bundled model', () => {
    const catalog = new ModelCatalog({
      config,
      logger: createLogger({ level: 'error', sink: { write: () => undefined } }),
    })
    expect(catalog.list().length).toBeGreaterThan(0)
    for (const e of catalog.list())
      expect(parse(launchPlan(config, e, SOLO, MID).serveArgs), e.def.key).toMatchObject({ ok: true })
    // One Python parser run per bundled model: slow on a loaded machine, not a timing check.
  }, 120_000)

  it('normalises underscores to hyphens and refuses what vLLM refuses, with its message', () => {
    expect(parse(['org/m', '--max_model_len', '4096', '--enable_prefix_caching'])).toMatchObject({ ok: true })
    expect(parse(['org/m', '--max-model-len', 'lots']).error).toMatch(
      /argument --max-model-len: invalid human_readable_int_or_auto value: 'lots'/,
    )
    expect(parse(['org/m', '--kv-cache-dtype', 'fp4']).error).toMatch(
      /argument --kv-cache-dtype: invalid choice: 'fp4'/,
    )
    expect(parse(['org/m', '--speculative-config', '{not json']).ok).toBe(false)
  })
})

describe('layouts: solo is one node, cluster spans both with tensor parallelism', () => {
  const cluster = entry({ key: 'big', repo: 'org/big', mode: 'both' }, ['--max-model-len', '8192'])

  it('cluster adds --tensor-parallel-size 2 and the Ray backend a mid-2026 launcher needs', () => {
    const plan = launchPlan(config, cluster, PAIR, MID)
    expect(plan.serveArgs).toEqual([
      'org/big',
      '--host',
      '0.0.0.0',
      '--port',
      '8123',
      '--max-model-len',
      '8192',
      '--tensor-parallel-size',
      '2',
      '--distributed-executor-backend',
      'ray',
      '--served-model-name',
      'org/big',
      'big',
      '--enable-force-include-usage',
    ])
    expect(plan.layout).toEqual({ mode: 'cluster', nodes: ['node1', 'node2'], tensor_parallel: 2, backend: 'ray' })
    expect(argvOf(plan.launchCmd)).not.toContain('--solo')
  })

  it('a launcher that picks its own backend (--ray/--no-ray) gets tensor parallelism only', () => {
    const plan = launchPlan(config, cluster, PAIR, launcher('late-2026'))
    expect(plan.serveArgs.slice(-6, -4)).toEqual(['--tensor-parallel-size', '2'])
    expect(plan.serveArgs).not.toContain('--distributed-executor-backend')
    expect(plan.layout.backend).toBe('launcher')
  })

  it("keeps an entry's own parallelism and backend, in any spelling vLLM accepts", () => {
    const fixed = entry({ key: 'f', repo: 'org/f', mode: 'cluster' }, ['-tp', '2', '--distributed_executor_backend=mp'])
    const plan = launchPlan(config, fixed, PAIR, MID)
    expect(plan.serveArgs.slice(5, -4)).toEqual(['-tp', '2', '--distributed_executor_backend=mp'])
    expect(plan.layout).toEqual({ mode: 'cluster', nodes: ['node1', 'node2'], tensor_parallel: 2, backend: 'entry' })
  })

  it('solo strips every parallelism flag and the backend', () => {
    const e = entry({ key: 's', repo: 'org/s', mode: 'both' }, [
      '--tensor-parallel-size=2',
      '-pp',
      '2',
      '--distributed-executor-backend',
      'ray',
      '--max-num-seqs',
      '4',
    ])
    const plan = launchPlan(config, e, SOLO, MID)
    expect(plan.serveArgs.slice(5, -4)).toEqual(['--max-num-seqs', '4'])
    expect(plan.layout).toEqual({ mode: 'solo', nodes: ['node1'], tensor_parallel: 1, backend: null })
  })

  it('refuses a layout that needs more nodes than the cluster has, naming the count', () => {
    const e = entry({ key: 'k', repo: 'org/k', mode: 'cluster' }, ['--tensor-parallel-size', '4', '-pp', '2'])
    expect(parallelism(e.launchArgs)).toMatchObject({ tp: 4, pp: 2, nodes: 8 })
    expect(() => launchPlan(config, e, PAIR, MID)).toThrow(LaunchRefused)
    expect(() => layoutArgs(e.launchArgs, PAIR.nodes, MID)).toThrow(/needs 8 nodes .*2 were chosen/)
    expect(() => nodesForMode(e.launchArgs, 'cluster', ['node1', 'node2'])).toThrow(
      /needs 8 nodes .*this cluster has 2/,
    )
  })

  it("launches the entry's own image with -t", () => {
    const e = entry({ key: 'i', repo: 'org/i', container: 'vllm-node-tf5' })
    expect(argvOf(launchPlan(config, e, SOLO, MID).launchCmd).slice(0, 3)).toEqual(['--solo', '-t', 'vllm-node-tf5'])
  })

  it('passes the mods the entry needs to the launcher with --apply-mod, and refuses a path outside the checkout', () => {
    const e = entry({ key: 'm', repo: 'org/m', mods: ['mods/fix-glm-4.7'] })
    expect(argvOf(launchPlan(config, e, SOLO, MID).launchCmd)).toContain('mods/fix-glm-4.7')
    const bad = entry({ key: 'm', repo: 'org/m', mods: ['../../etc'] })
    expect(() => launchPlan(config, bad, SOLO, MID)).toThrow(/not a path inside the launcher checkout/)
  })
})

describe('commands for the launcher generation that is installed', () => {
  const EARLY = launcher('early-2026')

  it('reads the generations from their recorded probes', () => {
    expect(EARLY.generation).toBe('early-2026')
    expect(MID.generation).toBe('mid-2026')
    expect(launcher('late-2026').generation).toBe('late-2026')
    expect(EARLY.missing.map((m) => m.capability)).toEqual(
      expect.arrayContaining(['solo', 'daemon_exec', 'quoted_exec', 'recipes']),
    )
  })

  it('an early-2026 launcher without --solo refuses a solo launch, naming what is missing and the fix', () => {
    const e = entry({ key: 'm', repo: 'org/model' })
    expect(() => launchPlan(config, e, SOLO, EARLY)).toThrow(/no --solo.*Services → Updates/)
  })

  it('an early-2026 launcher starts the cluster with -d start and Tandem dispatches vllm serve with every word intact', () => {
    const e = entry({ key: 'm', repo: 'org/model', mode: 'cluster' }, ['--speculative-config', '{"a": "b c"}'])
    const plan = launchPlan(config, e, PAIR, EARLY)
    const [start, dispatch] = plan.launchCmd.split(' && docker exec ')
    expect(argvOf(start as string)).toEqual(['-t', 'vllm-node', '--name', 'vllm_node', '-d', 'start'])
    // What `docker exec -d <c> bash -c <payload>` hands bash: the payload; bash then sees the serve words.
    const argv = spawnSync('bash', ['-c', `printf '%s\\n' ${dispatch as string}`], { encoding: 'utf8' }).stdout
    const [d, name, bash, c, payload] = argv.split('\n')
    expect([d, name, bash, c]).toEqual(['-d', 'vllm_node', 'bash', '-c'])
    const serve = (payload as string).replace(/ >> \/proc\/1\/fd\/1 2>&1$/, '')
    const words = spawnSync('bash', ['-c', `printf '%s\\n' ${serve}`], { encoding: 'utf8' })
    expect(words.stdout.split('\n').slice(0, -1)).toEqual(plan.cmdArgs)
    expect(plan.cmdArgs).toContain('{"a": "b c"}')
    expect(payload).toMatch(/>> \/proc\/1\/fd\/1 2>&1$/)
    expect(argvOf(stopCommand(config, SOLO, EARLY))).toEqual(['--name', 'vllm_node', 'stop'])
  })
})
