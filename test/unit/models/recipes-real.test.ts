import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ApiError } from '../../../src-main/contract/errors'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { validateModelDef } from '../../../src-main/models/catalog'
import { Recipes, recipeToView, type RecipeContext, type RecipesOptions } from '../../../src-main/models/recipes'

/** Real launcher recipes (test/fixtures/recipes/README.md names the upstream file and commit of each). */
const FIXTURES = path.resolve(__dirname, '../../fixtures/recipes')
const ROOTS = ['/home', '/data', '/mnt', '/srv', '/opt/models']
const TWO_NODES: RecipeContext = { localRoots: ROOTS, nodeCount: 2, peer: { host: '10.0.0.12', user: 'spark' } }
const ONE_NODE: RecipeContext = { localRoots: ROOTS, nodeCount: 1, peer: null }

const real = (file: string, ctx: RecipeContext = TWO_NODES) =>
  recipeToView(path.basename(file), fs.readFileSync(path.join(FIXTURES, file), 'utf8'), ctx)
const argAfter = (args: readonly string[] | undefined, flag: string): string | undefined =>
  args?.[args.indexOf(flag) + 1]

describe('real recipes: image, build arguments and mods are kept', () => {
  it("keeps the recipe's own image and the build arguments it is built with", () => {
    const v = real('deepseek-v4-flash.yaml')
    expect(v.error).toBeNull()
    expect(v.model).toMatchObject({
      key: 'deepseek-v4-flash',
      repo: 'deepseek-ai/DeepSeek-V4-Flash',
      container: 'vllm-node-dsv4',
      build_args: [
        '--vllm-repo',
        'https://github.com/jasl/vllm.git',
        '--vllm-ref',
        'sm120-pr-41834-stable-preview-20260624',
        '--rebuild-vllm',
        '--rebuild-flashinfer',
        '--deepgemm-ref',
        'nv_dev',
      ],
    })
    expect(v.model?.mods).toBeUndefined()
  })

  it('says in the description what must be built, with the real build-and-copy.sh flags', () => {
    const d = real('deepseek-v4-flash.yaml').model?.description ?? ''
    expect(d).toContain(
      '`./build-and-copy.sh -t vllm-node-dsv4 --vllm-repo https://github.com/jasl/vllm.git --vllm-ref ' +
        'sm120-pr-41834-stable-preview-20260624 --rebuild-vllm --rebuild-flashinfer --deepgemm-ref nv_dev ' +
        '-c 10.0.0.12 -u spark --copy-parallel`',
    )
    // With node1 alone there is no peer to copy the image to.
    expect(real('glm-4.7-flash-awq.yaml', ONE_NODE).model?.description).toContain(
      '`./build-and-copy.sh -t vllm-thor-tf5 --pre-tf`',
    )
  })

  it('keeps mods and says the launcher must apply them', () => {
    const v = real('nemotron-3-nano-nvfp4.yaml')
    expect(v.model).toMatchObject({ container: 'vllm-node', mods: ['mods/fix-nemotron-nano'], mode: 'solo' })
    expect(v.model?.build_args).toBeUndefined()
    expect(v.model?.description).toMatch(/launch-cluster\.sh --apply-mod.*mods\/fix-nemotron-nano/)
    // The default image with no build arguments needs no build note.
    expect(v.model?.description).not.toContain('build-and-copy.sh')
    // A mod outside the checkout (an absolute path) is refused at import, not first at launch.
    const kimi = real('kimi-k2.6-native-int4.yaml')
    expect(kimi.model).toBeNull()
    expect(kimi.error).toMatch(/kimi_sm121_flashinfer_mla.*is not a path inside the launcher checkout/)
  })
})

describe('real recipes: JSON engine arguments with < and >', () => {
  it('imports a reasoning config holding <think>, byte-exact', () => {
    const v = real('deepseek-v4-flash.yaml')
    expect(v.error).toBeNull()
    expect(argAfter(v.model?.engine_args, '--reasoning-config')).toBe(
      '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"<think>","reasoning_end_str":"</think>"}',
    )
    expect(argAfter(v.model?.engine_args, '--compilation-config')).toBe(
      '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}',
    )
  })

  it('fills placeholders inside a quoted JSON argument', () => {
    const v = real('4x-spark-cluster/deepseek-v4.1-flash.yaml')
    expect(v.error).toBeNull()
    expect(JSON.parse(argAfter(v.model?.engine_args, '--speculative-config') as string)).toMatchObject({
      method: 'dspark',
      num_speculative_tokens: 7,
      draft_tensor_parallel_size: 4,
    })
  })
})

describe('real recipes: the nodes a recipe needs', () => {
  const cases: [string, number][] = [
    ['glm-5-int4.yaml', 4],
    ['8x-spark-cluster/glm-5-fp8.yaml', 8],
    ['4x-spark-cluster/deepseek-v4.1-flash.yaml', 4],
    ['4x-spark-cluster/nemotron-3-ultra-nvfp4.yaml', 4],
    ['3x-spark-cluster/mimo-v2.6-flash-pp3.yaml', 3],
  ]
  for (const [file, nodes] of cases) {
    it(`${file} needs ${nodes} nodes: not runnable on two, with the count in the reason`, () => {
      const v = real(file)
      expect(v).toMatchObject({ nodes_needed: nodes, runnable: false, error: null })
      expect(v.reason).toContain(`needs ${nodes} nodes`)
      expect(v.reason).toContain('2 configured here')
      expect(v.model?.mode).toBe('cluster')
    })
  }

  it('a cluster recipe keeps its parallel layout; the executor backend is left to the launcher', () => {
    const ds = real('deepseek-v4-flash.yaml')
    expect(ds).toMatchObject({ nodes_needed: 2, runnable: true, reason: null })
    expect(ds.model?.mode).toBe('cluster')
    expect(argAfter(ds.model?.engine_args, '--tensor-parallel-size')).toBe('2')
    expect(argAfter(ds.model?.engine_args, '--pipeline-parallel-size')).toBe('1')
    expect(ds.model?.engine_args).not.toContain('--distributed-executor-backend')
    expect(ds.model?.engine_args).not.toContain('ray')
    const mimo = real('3x-spark-cluster/mimo-v2.6-flash-pp3.yaml').model?.engine_args
    expect(argAfter(mimo, '--pipeline-parallel-size')).toBe('3')
    const glm5 = real('glm-5-int4.yaml').model?.engine_args
    expect(argAfter(glm5, '-tp')).toBe('4')
  })

  it('a cluster recipe needs two nodes: runnable with node1 and node2, not with node1 alone', () => {
    expect(real('deepseek-v4-flash.yaml', ONE_NODE)).toMatchObject({ nodes_needed: 2, runnable: false })
    expect(real('deepseek-v4-flash.yaml', ONE_NODE).reason).toMatch(/needs 2 nodes.*1 configured here/)
  })

  it('solo-only runs with tensor parallel 1, as the launcher forces it, whatever the default', () => {
    const g = real('gemma4-26b-a4b-nvfp4.yaml', ONE_NODE)
    expect(g).toMatchObject({ nodes_needed: 1, runnable: true, reason: null, solo: true, cluster: false })
    expect(g.model?.mode).toBe('solo')
    expect(g.model?.engine_args).not.toContain('-tp')
    expect(g.model?.engine_args).not.toContain('--distributed-executor-backend')
  })

  it('solo or cluster with tensor parallel 1 leaves the layout to the swap', () => {
    const g = real('glm-4.7-flash-awq.yaml')
    expect(g).toMatchObject({ nodes_needed: 1, runnable: true, solo: true, cluster: true })
    expect(g.model?.mode).toBe('both')
    expect(g.model?.engine_args).not.toContain('-tp')
  })

  it('every imported entry passes the catalog validator again (what import persists)', () => {
    for (const file of ['deepseek-v4-flash.yaml', 'nemotron-3-nano-nvfp4.yaml', 'glm-4.7-flash-awq.yaml']) {
      const v = real(file)
      expect(() => validateModelDef(v.model, ROOTS)).not.toThrow()
    }
  })
})

describe('Recipes: listing and import against the nodes configured here', () => {
  const files = ['deepseek-v4-flash.yaml', 'glm-5-int4.yaml', 'nemotron-3-nano-nvfp4.yaml']
  const target = { host: '10.0.0.11', user: 'spark', port: 22 }
  /** A node1 that answers the read command with the fixture files, each after the command's own marker. */
  const make = (node2: typeof target | null): Recipes => {
    const exec = async (_t: unknown, command: string) => {
      const mark = /(@@tandem-recipe-[0-9a-f]+) file/.exec(command)?.[1] as string
      const stdout = files
        .map((f) => `${mark} file ${f}\n${fs.readFileSync(path.join(FIXTURES, f), 'utf8')}\n`)
        .join('')
      return { code: 0, signal: null, stdout, stderr: '' }
    }
    return new Recipes({
      config: { llm: { launcherDir: '$HOME/spark-vllm-docker' }, models: { localRoots: ROOTS } },
      nodes: { pool: { exec }, targets: { node1: target, node2 } },
      logger: createLogger({ sink: new MemorySink() }),
    } as unknown as RecipesOptions)
  }
  const refusal = async (recipes: Recipes, name: string): Promise<ApiError> => {
    const err = await recipes.toModelDef(name).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    return err as ApiError
  }

  it('lists a 4-node recipe as not runnable on node1 and node2, and refuses its import with 409', async () => {
    const recipes = make({ ...target, host: '10.0.0.12' })
    const { recipes: list } = await recipes.list()
    expect(list.find((r) => r.name === 'glm-5-int4')).toMatchObject({ nodes_needed: 4, runnable: false })
    const err = await refusal(recipes, 'glm-5-int4')
    expect(err.status).toBe(409)
    expect(err.message).toMatch(/glm-5-int4 is not runnable here: needs 4 nodes.*2 configured here/)
    expect((await recipes.toModelDef('deepseek-v4-flash')).container).toBe('vllm-node-dsv4')
  })

  it('with node1 alone a two-node recipe is refused and a solo one imports', async () => {
    const recipes = make(null)
    expect((await refusal(recipes, 'deepseek-v4-flash')).status).toBe(409)
    expect((await recipes.toModelDef('nemotron-3-nano-nvfp4')).mode).toBe('solo')
    const { recipes: list } = await recipes.list()
    expect(list.find((r) => r.name === 'deepseek-v4-flash')?.model?.description).not.toContain(' -c ')
  })
})
