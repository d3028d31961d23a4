import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import type { LauncherInfo, ModelDef } from '../../../src-main/contract/models'
import { validateModelDef } from '../../../src-main/models/catalog'
import { launchPlan, LaunchRefused, type PlacementNodes } from '../../../src-main/models/launch'
import { parseProbe } from '../../../src-main/models/launcherCapabilities'
import { dryRunScript } from '../../../src-main/models/launchScript'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import {
  readCommand,
  Recipes,
  recipeToView,
  type RecipeContext,
  type RecipesOptions,
} from '../../../src-main/models/recipes'
import type { CatalogEntry } from '../../../src-main/models/types'
import { LaunchValidator, validationCommand, type ValidatorDeps } from '../../../src-main/models/validate'
import { dryRuns, UPSTREAM_RECIPES, type DryRun } from '../../helpers/upstreamRecipes'

/**
 * The launcher's published recipes at upstream 358bf26 and what its own runner printed for them
 * (test/fixtures/recipes/upstream-358bf26/README.md), against Tandem's listing and launch.
 */
const RECIPES = UPSTREAM_RECIPES
const ROOTS = ['/home', '/data']
const ctx = (nodeCount: number): RecipeContext => ({ localRoots: ROOTS, nodeCount, peer: null })
const view = (file: string, nodes = 2) =>
  recipeToView(file, fs.readFileSync(path.join(RECIPES, file), 'utf8'), ctx(nodes))

const runs = dryRuns
/**
 * The recorded run of a recipe with the runner argv Tandem builds: solo or on `-n` nodes, and the
 * gateway's own engine args after `--` (gatewayEngineArgs.ts).
 */
function recordedLaunch(recipe: string, mode: 'solo' | 'nodes'): DryRun {
  const r = runs.find(
    (x) =>
      x.recipe === recipe &&
      x.args[0] === (mode === 'solo' ? '--solo' : '-n') &&
      x.args.includes('--enable-force-include-usage'),
  )
  if (r === undefined) throw new Error(`no recorded launch of ${recipe}`)
  return r
}

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-recipes-'))
afterAll(() => fs.rmSync(home, { recursive: true, force: true }))
const config = loadConfig({ env: { DATA_DIR: home, LLM_PORT: '18000', LLM_CONTAINER: 'tandem_llm' } })

function probe(file: string): LauncherInfo {
  return parseProbe(
    fs.readFileSync(path.join(__dirname, '../../fixtures/launcher', file), 'utf8'),
    '$HOME/spark-vllm-docker',
    0,
  )
}
/** The launcher of upstream 358bf26 (probe run on its scripts), with its runner… */
const RUNNER = probe('probe-358bf26.txt')
/** …and the same launcher without run-recipe.py (or without PyYAML): the fallback. */
const NO_RUNNER: LauncherInfo = { ...RUNNER, capabilities: RUNNER.capabilities.filter((c) => c !== 'run_recipe') }
const MID = probe('probe-mid-2026.txt')

function entryOf(def: ModelDef): CatalogEntry {
  return { def, tags: ['custom', 'recipe'], bundled: false, effectiveKnobs: {}, launchArgs: def.engine_args, knobs: {} }
}
const SOLO: PlacementNodes = { nodes: ['node1'], addresses: null }
/** The runner's arguments for qwen3.6-35b-a3b-fp8 placed solo: Tandem's port, container name and daemon mode. */
const SOLO_RUNNER_ARGS = [
  'run-recipe.py',
  'recipes/qwen3.6-35b-a3b-fp8.yaml',
  '--solo',
  '--tp',
  '1',
  '--port',
  '18000',
  '--name',
  'tandem_llm',
  '-d',
  // The gateway's engine args (gatewayEngineArgs.ts), after the runner's `--`.
  '--',
  '--served-model-name',
  'Qwen/Qwen3.6-35B-A3B-FP8',
  'qwen3.6-35b-a3b-fp8',
  '--enable-force-include-usage',
]
const nodesOf = (n: number): PlacementNodes => ({
  nodes: Array.from({ length: n }, (_, i) => `node${i + 1}`),
  addresses: Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}`),
})

/**
 * Runs a launch command in a scratch launcher checkout whose runner and launch-cluster.sh only
 * print what they were given (argv, one per line, then the launch script's text after a marker).
 */
function runLaunch(command: string): { argv: string[]; script: string | null } {
  const dir = path.join(home, 'spark-vllm-docker')
  const bin = path.join(home, 'bin')
  fs.mkdirSync(dir, { recursive: true })
  fs.mkdirSync(bin, { recursive: true })
  const printer = [
    '#!/bin/bash',
    'printf "%s\\n" "$@"',
    'while [ $# -gt 0 ]; do if [ "$1" = --launch-script ]; then echo @@script; cat "$2"; fi; shift; done',
  ].join('\n')
  fs.writeFileSync(path.join(dir, 'launch-cluster.sh'), printer, { mode: 0o755 })
  fs.writeFileSync(path.join(bin, 'python3'), printer, { mode: 0o755 })
  const r = spawnSync('bash', ['-c', command], {
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: home },
  })
  expect(r.status, r.stderr).toBe(0)
  const at = r.stdout.indexOf('@@script\n')
  const argvText = at === -1 ? r.stdout : r.stdout.slice(0, at)
  return { argv: argvText.split('\n').slice(0, -1), script: at === -1 ? null : r.stdout.slice(at + 9) }
}

/** The launch-cluster.sh words the runner's dry run says it would call (without the script's path). */
function recordedLauncherWords(stdout: string): string[] {
  const line = stdout.split('\n').find((l) => l.startsWith('   ./launch-cluster.sh')) as string
  return line.trim().split(/\s+/).slice(1, -1)
}

describe('listing the published recipes (358bf26)', () => {
  it('reads every recipe, subfolders included, with one bounded command', () => {
    const dir = path.join(home, 'checkout')
    fs.cpSync(RECIPES, path.join(dir, 'recipes'), { recursive: true })
    const mark = '@@mark'
    const r = spawnSync('bash', ['-c', readCommand(dir, mark)], { encoding: 'utf8' })
    const files = r.stdout
      .split('\n')
      .filter((l) => l.startsWith(`${mark} file `))
      .map((l) => l.slice(`${mark} file `.length))
    expect(files).toHaveLength(35)
    expect(files).toContain('4x-spark-cluster/minimax-m2.5.yaml')
    expect(files).toContain('8x-spark-cluster/glm-5.2-nvfp4.yaml')
  })

  it('reads at most 64 KB of a recipe, even one long line', () => {
    const dir = path.join(home, 'big-checkout')
    fs.mkdirSync(path.join(dir, 'recipes'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'recipes', 'big.yaml'), `command: ${'x'.repeat(300_000)}\nname: tail\n`)
    const r = spawnSync('bash', ['-c', readCommand(dir, '@@m')], { encoding: 'utf8' })
    expect(r.stdout.startsWith('@@m file big.yaml\n')).toBe(true)
    expect(r.stdout.length).toBeLessThanOrEqual(64 * 1024 + 100)
    expect(r.stdout).not.toContain('name: tail')
  })

  it('counts every configured node (node1, node2 and NODES) and imports a 4x-spark-cluster recipe on four', async () => {
    const dir = path.join(home, 'list-checkout')
    fs.cpSync(RECIPES, path.join(dir, 'recipes'), { recursive: true })
    const exec = async (_t: unknown, command: string) => {
      const r = spawnSync('bash', ['-c', command], { encoding: 'utf8' })
      return { code: r.status, signal: null, stdout: r.stdout, stderr: r.stderr }
    }
    const t = (n: number) => ({ host: `10.0.0.${n}`, user: 'spark', port: 22 })
    const make = (targets: Record<string, unknown>) =>
      new Recipes({
        config: { llm: { launcherDir: dir }, models: { localRoots: ROOTS } },
        nodes: { pool: { exec }, targets },
        logger: createLogger({ sink: new MemorySink() }),
      } as unknown as RecipesOptions)
    const four = await make({ node1: t(1), node2: t(2), node3: t(3), node4: t(4) }).list()
    expect(four.recipes).toHaveLength(35)
    expect(four.recipes.find((r) => r.path === '4x-spark-cluster/minimax-m2.5.yaml')).toMatchObject({ runnable: true })
    const two = make({ node1: t(1), node2: t(2) })
    expect((await two.list()).recipes.find((r) => r.name === '4x-spark-cluster--minimax-m2.5')?.reason).toMatch(
      /needs 4 nodes.*2 configured here/,
    )
    await expect(two.toModelDef('4x-spark-cluster--minimax-m2.5')).rejects.toMatchObject({ status: 409 })
  })

  it('a recipe needing four nodes is not runnable while one of the four is down', () => {
    const v = recipeToView(
      '4x-spark-cluster/minimax-m2.5.yaml',
      fs.readFileSync(path.join(RECIPES, '4x-spark-cluster/minimax-m2.5.yaml'), 'utf8'),
      { ...ctx(4), down: ['node3'] },
    )
    expect(v).toMatchObject({ runnable: false })
    expect(v.reason).toMatch(/needs 4 nodes; 4 configured here, but node3 was unreachable/)
    expect(v.model).not.toBeNull()
  })

  it('imports a recipe with a duplicated key, keeping the last value as PyYAML does', () => {
    const text = fs.readFileSync(path.join(RECIPES, 'nemotron-3-super-nvfp4.yaml'), 'utf8')
    expect(text.match(/^container:/gm)).toHaveLength(2)
    const v = view('nemotron-3-super-nvfp4.yaml')
    expect(v.error).toBeNull()
    expect(v.model?.container).toBe('vllm-node')
  })

  it('lists an either-mode recipe (tensor parallel 2, neither solo_only nor cluster_only) as both', () => {
    const v = view('qwen3.6-35b-a3b-fp8.yaml', 1)
    expect(v).toMatchObject({ solo: true, cluster: true, runnable: true, reason: null })
    expect(v.model?.mode).toBe('both')
  })

  it('keeps a recipe env for the launch instead of dropping it', () => {
    const v = view('4x-spark-cluster/minimax-m2.5.yaml', 4)
    expect(v.model?.recipe?.env).toEqual({
      VLLM_DISTRIBUTED_EXECUTOR_CONFIG: '{"placement_group_options":{"strategy":"SPREAD"}}',
    })
    expect(v.model?.description).not.toMatch(/not applied/)
  })

  it('says a 4x-spark-cluster recipe needs 4 nodes with 2 configured, and runs it with 4', () => {
    const two = view('4x-spark-cluster/minimax-m2.5.yaml', 2)
    expect(two).toMatchObject({ name: '4x-spark-cluster--minimax-m2.5', runnable: false, nodes_needed: 4 })
    expect(two.reason).toMatch(/needs 4 nodes .*2 configured here/)
    const four = view('4x-spark-cluster/minimax-m2.5.yaml', 4)
    expect(four).toMatchObject({ runnable: true, reason: null })
    expect(four.model?.key).toBe('4x-spark-cluster--minimax-m2.5')
  })

  it('imports the published recipes (each refusal says why)', () => {
    const all = fs
      .readdirSync(RECIPES, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => view(f, 8))
    expect(all).toHaveLength(35)
    const refused = all.filter((v) => v.model === null).map((v) => `${v.name}: ${v.error ?? ''}`)
    expect(refused).toEqual([])
  })
})

describe('launching a recipe as the launcher runs it', () => {
  const def = (file: string, nodes = 2): ModelDef => {
    const v = view(file, nodes)
    if (v.model === null) throw new Error(v.error ?? 'refused')
    return v.model as ModelDef
  }

  it('solo: through run-recipe.py with --solo and --tp 1, Tandem port, container name and daemon mode', () => {
    const plan = launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), SOLO, RUNNER)
    const { argv } = runLaunch(plan.launchCmd)
    expect(argv).toEqual(SOLO_RUNNER_ARGS)
    expect(plan.layout).toMatchObject({ mode: 'solo', tensor_parallel: 1 })
    expect(plan.recipe?.script).toBe(dryRunScript(recordedLaunch('qwen3.6-35b-a3b-fp8.yaml', 'solo').stdout))
    expect(plan.cmdArgs).toContain('--chat-template')
  })

  it('two nodes: the recipe TP (2), the nodes by -n, and the same script the runner prints', () => {
    const plan = launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), nodesOf(2), RUNNER)
    const { argv } = runLaunch(plan.launchCmd)
    expect(argv.slice(0, 5)).toEqual([
      'run-recipe.py',
      'recipes/qwen3.6-35b-a3b-fp8.yaml',
      '-n',
      '10.0.0.1,10.0.0.2',
      '--port',
    ])
    expect(argv).not.toContain('--tp')
    expect(plan.layout).toMatchObject({ mode: 'cluster', tensor_parallel: 2 })
    expect(plan.recipe?.script).toBe(dryRunScript(recordedLaunch('qwen3.6-35b-a3b-fp8.yaml', 'nodes').stdout))
  })

  it('exports env with quotes exactly as the runner writes it', () => {
    const plan = launchPlan(config, entryOf(def('4x-spark-cluster/minimax-m2.5.yaml', 4)), nodesOf(4), NO_RUNNER)
    const expected = dryRunScript(recordedLaunch('4x-spark-cluster/minimax-m2.5.yaml', 'nodes').stdout) as string
    expect(expected).toContain('export VLLM_DISTRIBUTED_EXECUTOR_CONFIG="{"placement_group_options"')
    expect(runLaunch(plan.launchCmd).script).toBe(expected)
  })

  it.each([
    ['qwen3.6-35b-a3b-fp8.yaml', 'solo'],
    ['qwen3.6-35b-a3b-fp8.yaml', 'nodes'],
    ['4x-spark-cluster/minimax-m2.5.yaml', 'nodes'],
    ['step-3.7-flash-fp8.yaml', 'nodes'],
    ['diffusion-gemma-bf16.yaml', 'solo'],
  ] as const)('without run-recipe.py: %s (%s) gets the runner’s script and launch-cluster.sh words', (file, mode) => {
    const run = recordedLaunch(file, mode)
    const nodes = mode === 'solo' ? SOLO : nodesOf((run.args[1] as string).split(',').length)
    const plan = launchPlan(config, entryOf(def(file, 8)), nodes, NO_RUNNER)
    expect(plan.recipe?.runner).toBeNull()
    const { argv, script } = runLaunch(plan.launchCmd)
    expect(script).toBe(dryRunScript(run.stdout))
    expect(argv.slice(0, argv.indexOf('--launch-script'))).toEqual(recordedLauncherWords(run.stdout))
  })

  it('a launcher that takes no launch script runs the same script by bash -c, dispatched by its -d exec', () => {
    const plan = launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), SOLO, MID)
    const { argv } = runLaunch(plan.launchCmd)
    const at = argv.indexOf('exec')
    expect(argv.slice(at + 1, at + 3)).toEqual(['bash', '-c'])
    expect(argv.slice(at + 3).join('\n')).toBe(dryRunScript(recordedLaunch('qwen3.6-35b-a3b-fp8.yaml', 'solo').stdout))
  })

  it('an early-2026 launcher (exec stops the cluster): -d start, then the script dispatched by Tandem', () => {
    const early = probe('probe-early-2026.txt')
    const plan = launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), nodesOf(2), early)
    expect(plan.launchCmd).toMatch(/launch-cluster\.sh .*'-d' 'start' && docker exec -d 'tandem_llm' bash -c /)
    // Its launcher picks no backend: the script keeps the recipe's Ray backend, as the runner does with --ray.
    expect(plan.recipe?.script).toContain('--distributed-executor-backend ray')
    expect(() => launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), SOLO, early)).toThrow(/no --solo/)
  })

  it('gates -n on the probe: a launcher without it is refused, naming the missing capability', () => {
    const noNodes: LauncherInfo = { ...RUNNER, capabilities: RUNNER.capabilities.filter((c) => c !== 'nodes_flag') }
    let caught: unknown = null
    try {
      launchPlan(config, entryOf(def('qwen3.6-35b-a3b-fp8.yaml')), nodesOf(2), noNodes)
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(LaunchRefused)
    expect((caught as LaunchRefused).capability).toBe('nodes_flag')
    expect((caught as Error).message).toMatch(/no -n/)
  })

  it('respects the launcher’s no-Ray default: no --ray to the runner, no Ray backend in the script', () => {
    const plan = launchPlan(config, entryOf(def('4x-spark-cluster/minimax-m2.5.yaml', 4)), nodesOf(4), RUNNER)
    expect(runLaunch(plan.launchCmd).argv).not.toContain('--ray')
    expect(plan.recipe?.script).not.toContain('--distributed-executor-backend')
  })
})

describe('a malicious recipe dropped into recipes/', () => {
  const base = (over: Record<string, string>): string => {
    const fields: Record<string, string> = {
      recipe_version: '"1"',
      name: 'Evil',
      container: 'vllm-node',
      command: '"vllm serve org/m --port {port}"',
      defaults: '{port: 8000}',
      ...over,
    }
    return Object.entries(fields)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n')
  }
  it.each([
    ['a name that leaves the script comment', { name: '"Evil\\ntouch CANARY"' }, /recipe.name/],
    ['a container with shell syntax', { container: '"vllm-node; touch CANARY"' }, /container/],
    ['an env key with shell syntax', { env: '{"A; touch CANARY": "1"}' }, /recipe.env/],
    ['an env value with command substitution', { env: '{A: "$(touch CANARY)"}' }, /recipe.env.A/],
    ['an env value with backquotes', { env: '{A: "`touch CANARY`"}' }, /recipe.env.A/],
    ['a mod outside the checkout', { mods: '["../../tmp/evil"]' }, /not a path inside the launcher checkout/],
    ['a mod with shell syntax', { mods: '["mods/x;touch CANARY"]' }, /not a path inside the launcher checkout/],
    ['a command with a second command', { command: '"vllm serve org/m; touch CANARY"' }, /shell syntax/],
    ['a command with substitution', { command: '"vllm serve org/m --x $(touch CANARY)"' }, /shell syntax/],
  ])('refuses %s, saying why', (_what, over, why) => {
    const v = recipeToView('evil.yaml', base(over), ctx(2))
    expect(v.model).toBeNull()
    expect(v.runnable).toBe(false)
    expect(v.error).toMatch(why)
  })

  it('an entry sent with a recipe whose command is not plain words is refused like an import', () => {
    const def = view('qwen3.6-35b-a3b-fp8.yaml').model as ModelDef
    const evil = { ...def, recipe: { ...def.recipe, command: 'vllm serve org/m; touch CANARY' } }
    expect(() => validateModelDef(evil, ROOTS)).toThrow(/recipe.command: shell syntax/)
    const other = { ...def, recipe: { ...def.recipe, command: 'touch CANARY' } }
    expect(() => validateModelDef(other, ROOTS)).toThrow(/not `vllm serve/)
    expect(() => validateModelDef(def, ROOTS)).not.toThrow()
  })

  it('is never listed under a file name with shell syntax', () => {
    const dir = path.join(home, 'evil-checkout')
    fs.mkdirSync(path.join(dir, 'recipes'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'recipes', 'x$(touch CANARY).yaml'), base({}))
    fs.writeFileSync(path.join(dir, 'recipes', 'ok.yaml'), base({}))
    const r = spawnSync('bash', ['-c', readCommand(dir, '@@m')], { encoding: 'utf8', cwd: dir })
    expect(r.stdout).toContain('@@m file ok.yaml')
    expect(fs.existsSync(path.join(dir, 'CANARY'))).toBe(false)
  })

  it('quotes what it accepts: launching runs nothing the recipe did not declare', () => {
    const text = base({ name: '"Evil; touch CANARY && $HOME"', env: '{HF_HOME_X: "$HOME/x", Q: \'say "hi"\'}' })
    const v = recipeToView('evil.yaml', text, ctx(2))
    expect(v.error).toBeNull()
    for (const launcher of [RUNNER, NO_RUNNER, MID]) {
      const plan = launchPlan(config, entryOf(v.model as ModelDef), SOLO, launcher)
      const r = spawnSync('bash', ['-c', plan.launchCmd], { cwd: home, env: { PATH: '/usr/bin:/bin', HOME: home } })
      expect(r.error).toBeUndefined()
      expect(fs.existsSync(path.join(home, 'CANARY'))).toBe(false)
      expect(fs.existsSync(path.join(home, 'spark-vllm-docker', 'CANARY'))).toBe(false)
    }
  })
})

describe("validation asks the launcher's runner for the launch script", () => {
  /** Runs a validation command with a runner that prints a recorded dry run and a docker that keeps what it is given. */
  function validateWith(dry: DryRun, plan: ReturnType<typeof launchPlan>): { inner: string; stdout: string } {
    const dir = path.join(home, 'spark-vllm-docker')
    const bin = path.join(home, 'vbin')
    fs.mkdirSync(path.join(dir, 'mods'), { recursive: true })
    for (const m of plan.mods) {
      fs.mkdirSync(path.join(dir, m), { recursive: true })
      fs.writeFileSync(path.join(dir, m, 'run.sh'), '#!/bin/bash\n')
    }
    fs.mkdirSync(bin, { recursive: true })
    fs.writeFileSync(path.join(home, 'dry.txt'), dry.stdout)
    fs.writeFileSync(path.join(bin, 'python3'), `#!/bin/bash\ncat ${JSON.stringify(path.join(home, 'dry.txt'))}\n`, {
      mode: 0o755,
    })
    const docker = [
      '#!/bin/bash',
      '[ "$1" = image ] && exit 0',
      'cat > /dev/null',
      `for a in "$@"; do last="$a"; done; printf '%s' "$last" > ${JSON.stringify(path.join(home, 'inner.txt'))}`,
      `echo 'TANDEM_VALIDATE {"ok":true,"stage":"done","error":null,"parser":"x"}'`,
    ].join('\n')
    fs.writeFileSync(path.join(bin, 'docker'), docker, { mode: 0o755 })
    const r = spawnSync('bash', ['-c', validationCommand(plan, RUNNER, '$HOME/spark-vllm-docker')], {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: home },
    })
    expect(r.status, r.stderr).toBe(0)
    return { inner: fs.readFileSync(path.join(home, 'inner.txt'), 'utf8'), stdout: r.stdout }
  }

  it("runs, in the container, the script the runner's dry run printed, after the recipe's mods", () => {
    const plan = launchPlan(config, entryOf(view('qwen3.6-35b-a3b-fp8.yaml').model as ModelDef), SOLO, RUNNER)
    // What the launch gives the runner, less daemon mode (a dry run starts nothing).
    expect(plan.recipe?.runner).toEqual(SOLO_RUNNER_ARGS.filter((a) => a !== '-d'))
    const { inner, stdout } = validateWith(recordedLaunch('qwen3.6-35b-a3b-fp8.yaml', 'solo'), plan)
    const script = dryRunScript(recordedLaunch('qwen3.6-35b-a3b-fp8.yaml', 'solo').stdout) as string
    expect(inner).toContain(script)
    expect(inner.indexOf('cd "$tandem_mods"/\'mods/fix-qwen3.6-chat-template\'')).toBeLessThan(inner.indexOf(script))
    expect(stdout).toContain('TANDEM_VALIDATE {"ok":true')
  })

  it("a run the runner refuses is a definitive no, in the runner's words", () => {
    const plan = launchPlan(config, entryOf(view('qwen3.6-35b-a3b-fp8.yaml').model as ModelDef), SOLO, RUNNER)
    const refusal = runs.find((r) => r.exit !== 0 && r.args[0] === '--solo') as DryRun
    fs.rmSync(path.join(home, 'inner.txt'), { force: true })
    fs.writeFileSync(path.join(home, 'inner.txt'), '')
    const { stdout } = validateWith(refusal, plan)
    expect(stdout).toContain('TANDEM_RUNNER_REFUSED')
    expect(stdout).toMatch(/Error: Recipe '.*' requires cluster mode\./)
  })

  it('the validator reads that as ok=false at stage launcher, and a dropped connection as ok=null', async () => {
    const entry = entryOf(view('qwen3.6-35b-a3b-fp8.yaml').model as ModelDef)
    const refusal = runs.find((r) => r.exit !== 0 && r.args[0] === '--solo') as DryRun
    const answer = { code: 0, signal: null, stdout: `TANDEM_RUNNER_REFUSED\n${refusal.stdout}`, stderr: '' }
    const make = (exec: () => Promise<typeof answer>) =>
      new LaunchValidator({
        config,
        pool: { exec },
        targetOf: () => ({ host: '127.0.0.1', user: 'spark', port: 22 }),
        logger: createLogger({ sink: new MemorySink() }),
        launcherOn: async () => RUNNER,
      } as unknown as ValidatorDeps)
    const no = await make(async () => answer).validate(entry, SOLO)
    expect(no).toMatchObject({ ok: false, stage: 'launcher' })
    expect(no.error).toMatch(/run-recipe\.py refuses the run: Error: Recipe '.*' requires cluster mode/)
    const open = await make(async () => {
      throw new Error('connection reset')
    }).validate(entry, SOLO)
    expect(open).toMatchObject({ ok: null, stage: 'connect' })
  })
})
