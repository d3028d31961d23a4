import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import YAML from 'yaml'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig, type Config } from '../../../src-main/config/load'
import { ApiError } from '../../../src-main/contract/errors'
import { ModelDef, modelsContract } from '../../../src-main/contract/models'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { defaultBundledFile, ModelCatalog } from '../../../src-main/models/catalog'
import { keptAsideCopy } from '../../helpers/keptAside'

let dir: string
let config: Config
let sink: MemorySink

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-catalog-'))
  config = loadConfig({ env: { DATA_DIR: dir } })
  sink = new MemorySink()
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const make = (): ModelCatalog => new ModelCatalog({ config, logger: createLogger({ sink }) })
const warnLines = (): string[] => sink.lines.filter((l) => / WARN |ERROR /.test(l))
const overridesFile = (): string => config.paths.modelsOverrides
const readOverrides = (): { models: { key: string }[]; knobs: Record<string, unknown> } =>
  YAML.parse(fs.readFileSync(overridesFile(), 'utf8'))

/** The status an ApiError thrown by fn carries. */
function statusOf(fn: () => unknown): number {
  try {
    fn()
  } catch (err) {
    if (err instanceof ApiError) return err.status
    throw err
  }
  throw new Error('expected an ApiError')
}

const repoModel = {
  key: 'my-model',
  name: 'My model',
  repo: 'acme/my-model-7b',
  engine_args: ['--max-model-len', '8192'],
}

describe('the bundled catalog', () => {
  const bundled = (): ModelDef[] =>
    (YAML.parse(fs.readFileSync(defaultBundledFile(), 'utf8')) as { models: unknown[] }).models.map((m) =>
      ModelDef.parse(m),
    )
  const flagValue = (args: readonly string[], flag: string): number => Number(args[args.indexOf(flag) + 1])

  it('holds 8–12 valid entries of every kind, with sizes and a cluster-only model', () => {
    const models = bundled()
    expect(models.length).toBeGreaterThanOrEqual(8)
    expect(models.length).toBeLessThanOrEqual(12)
    expect(new Set(models.map((m) => m.key)).size).toBe(models.length)
    for (const m of models) expect(m.size_bytes).toBeGreaterThan(1e9)
    expect(models.some((m) => m.mode === 'cluster')).toBe(true)
    // The whole file loads with nothing skipped.
    const catalog = make()
    expect(catalog.list().length).toBe(models.length)
    expect(warnLines()).toEqual([])
    expect(catalog.list().every((e) => e.tags.includes('bundled') && e.bundled)).toBe(true)
  })

  it('every multimodal entry carries --max-num-batched-tokens 16384; the hybrid one at least 2096', () => {
    const models = bundled()
    const multimodal = models.filter((m) => /vision|multimodal/i.test(m.description ?? ''))
    expect(multimodal.length).toBeGreaterThanOrEqual(2)
    for (const m of multimodal) expect(flagValue(m.engine_args, '--max-num-batched-tokens')).toBe(16384)
    const hybrid = models.filter((m) => /hybrid attention/i.test(m.description ?? ''))
    expect(hybrid.length).toBe(1)
    expect(flagValue((hybrid[0] as ModelDef).engine_args, '--max-num-batched-tokens')).toBeGreaterThanOrEqual(2096)
  })

  it('effective knobs are seeded from the bundled args', () => {
    const e = make().get('qwen3-32b-fp8')
    expect(e.effectiveKnobs).toMatchObject({ 'max-model-len': 32768, 'fp8-kv-cache': true, 'prefix-caching': true })
    expect(e.launchArgs).toEqual(e.def.engine_args)
  })
})

describe('custom entries', () => {
  it('add persists a valid entry, tags it custom, and notifies listeners', () => {
    const catalog = make()
    let changes = 0
    catalog.onChange(() => changes++)
    const entry = catalog.add(repoModel)
    expect(entry.tags).toEqual(['custom'])
    expect(changes).toBe(1)
    expect(readOverrides().models.map((m) => m.key)).toEqual(['my-model'])
    // A fresh catalog reads it back.
    expect(make().get('my-model').def.repo).toBe('acme/my-model-7b')
  })

  it('a local model is tagged local and keeps its chat template inside its path', () => {
    const entry = make().add({
      key: 'local-llama',
      name: 'Local',
      local_path: '/data/models/llama',
      chat_template: 'templates/chat.jinja',
    })
    expect(entry.tags).toEqual(['custom', 'local'])
    expect(
      make().add({
        ...repoModel,
        key: 'abs-tpl',
        local_path: '/srv/m',
        repo: undefined,
        chat_template: '/srv/m/t.jinja',
      }).def.chat_template,
    ).toBe('/srv/m/t.jinja')
  })

  const bad: [string, Record<string, unknown>][] = [
    ['both sources', { ...repoModel, local_path: '/data/m' }],
    ['neither source', { key: 'x', name: 'x' }],
    ['a relative path', { key: 'x', name: 'x', local_path: 'data/m' }],
    ['a .. segment', { key: 'x', name: 'x', local_path: '/data/../etc' }],
    ['a . segment', { key: 'x', name: 'x', local_path: '/data/./m' }],
    ['a path outside the roots', { key: 'x', name: 'x', local_path: '/etc/models' }],
    ['a root look-alike', { key: 'x', name: 'x', local_path: '/database/m' }],
    [
      'a chat template outside the local path',
      { key: 'x', name: 'x', local_path: '/data/m', chat_template: '/data/other/t.jinja' },
    ],
    ['a chat template climbing out', { key: 'x', name: 'x', local_path: '/data/m', chat_template: '../t.jinja' }],
    [
      'a sibling-prefix chat template',
      { key: 'x', name: 'x', local_path: '/data/m', chat_template: '/data/m2/t.jinja' },
    ],
    ['metacharacters in repo', { key: 'x', name: 'x', repo: 'acme/m;rm -rf' }],
    ['command substitution in repo', { key: 'x', name: 'x', repo: '$(id)/m' }],
    ['a semicolon in an engine arg', { ...repoModel, engine_args: ['--max-model-len', '1; rm -rf ~'] }],
    ['command substitution in an engine arg', { ...repoModel, engine_args: ['--served-model-name=$(id)'] }],
    ['a backquote in an engine arg', { ...repoModel, engine_args: ['`id`'] }],
    ['a single quote in an engine arg', { ...repoModel, engine_args: ["'x'"] }],
    ['a pipe in an engine arg', { ...repoModel, engine_args: ['a|b'] }],
    ['a newline in an engine arg', { ...repoModel, engine_args: ['a\nb'] }],
    ['a malformed flag', { ...repoModel, engine_args: ['--$x'] }],
    ['metacharacters in a chat template', { ...repoModel, chat_template: 'tpl;id' }],
    ['a bad key', { ...repoModel, key: '../x' }],
  ]
  for (const [what, input] of bad) {
    it(`refuses ${what} with 400 and persists nothing`, () => {
      const catalog = make()
      let changes = 0
      catalog.onChange(() => changes++)
      expect(statusOf(() => catalog.add(input))).toBe(400)
      expect(fs.existsSync(overridesFile())).toBe(false)
      expect(changes).toBe(0)
      // The contract's own input schema refuses the shape-level ones too.
      if (/source|relative|segment|repo|newline|key/.test(what))
        expect(modelsContract.addModel.input.safeParse(input).success).toBe(false)
    })
  }

  it('JSON engine arguments are accepted', () => {
    const args = [
      '--speculative-config',
      '{"method":"mtp","num_speculative_tokens":2}',
      '--compilation-config={"level":3}',
    ]
    expect(make().add({ ...repoModel, engine_args: args }).def.engine_args).toEqual(args)
  })

  it('an entry keeps its own pinned or idle ttl across a rewrite; a ttl of 0 or pinned: false is refused', () => {
    const catalog = make()
    expect(catalog.add({ ...repoModel, keep: { ttl_min: 20 } }).def.keep).toEqual({ ttl_min: 20 })
    expect(make().get('my-model').def.keep).toEqual({ ttl_min: 20 })
    expect(ModelDef.safeParse({ ...repoModel, key: 'm2', keep: { ttl_min: 0 } }).success).toBe(false)
    expect(ModelDef.safeParse({ ...repoModel, key: 'm3', keep: { pinned: false } }).success).toBe(false)
    expect(ModelDef.safeParse({ ...repoModel, key: 'm4', keep: { pinned: true, ttl_min: 5 } }).success).toBe(false)
  })

  it('a key already in the catalog is a 409', () => {
    const catalog = make()
    expect(statusOf(() => catalog.add({ ...repoModel, key: 'gpt-oss-120b' }))).toBe(409)
    catalog.add(repoModel)
    expect(statusOf(() => catalog.add(repoModel))).toBe(409)
  })

  it('remove deletes a custom entry; a bundled one is a 409; an unknown one a 404', () => {
    const catalog = make()
    catalog.add(repoModel)
    catalog.setKnobs('my-model', { 'max-model-len': 4096 })
    let changes = 0
    catalog.onChange(() => changes++)
    catalog.remove('my-model')
    expect(changes).toBe(1)
    expect(readOverrides()).toEqual({ models: [], knobs: {} })
    expect(statusOf(() => catalog.remove('gpt-oss-120b'))).toBe(409)
    expect(catalog.get('gpt-oss-120b').bundled).toBe(true)
    expect(statusOf(() => catalog.remove('nope'))).toBe(404)
    expect(changes).toBe(1)
  })
})

describe('knobs', () => {
  it('setKnobs persists, applies to launch args and effective knobs, and notifies', () => {
    const catalog = make()
    let changes = 0
    catalog.onChange(() => changes++)
    const e = catalog.setKnobs('qwen3-32b-fp8', { 'max-model-len': 16384, 'fp8-kv-cache': false })
    expect(changes).toBe(1)
    expect(e.effectiveKnobs).toMatchObject({ 'max-model-len': 16384, 'fp8-kv-cache': false, 'prefix-caching': true })
    expect(e.launchArgs).not.toContain('--kv-cache-dtype')
    expect(e.launchArgs.slice(-2)).toEqual(['--max-model-len', '16384'])
    expect(e.launchArgs.filter((a) => a === '--max-model-len')).toHaveLength(1)
    expect(readOverrides().knobs).toEqual({ 'qwen3-32b-fp8': { 'max-model-len': 16384, 'fp8-kv-cache': false } })
    expect(make().get('qwen3-32b-fp8').effectiveKnobs['max-model-len']).toBe(16384)
    // An empty set clears the override.
    expect(catalog.setKnobs('qwen3-32b-fp8', {}).effectiveKnobs['max-model-len']).toBe(32768)
    expect(readOverrides().knobs).toEqual({})
  })

  it('bad knob values are a 400 and nothing is written', () => {
    const catalog = make()
    for (const knobs of [
      { 'max-model-len': '4096; rm -rf ~' },
      { 'gpu-memory-utilization': '0.9$(id)' },
      { 'gpu-memory-utilization': 1.5 },
      { fastsafetensors: 'yes' },
      { 'tensor-parallel-size': 2 },
    ]) {
      expect(statusOf(() => catalog.setKnobs('qwen3-32b-fp8', knobs))).toBe(400)
      expect(modelsContract.setKnobs.input.safeParse({ key: 'qwen3-32b-fp8', knobs }).success).toBe(false)
    }
    expect(fs.existsSync(overridesFile())).toBe(false)
    expect(statusOf(() => catalog.setKnobs('nope', {}))).toBe(404)
  })
})

describe('the overrides file', () => {
  it('an invalid entry is skipped with a warning naming it; the rest loads and it survives a rewrite', () => {
    fs.writeFileSync(
      overridesFile(),
      YAML.stringify({
        models: [
          repoModel,
          { key: 'evil', name: 'Evil', repo: 'acme/x', engine_args: ['--x', '$(reboot)'] },
          { key: 'outside', name: 'Outside', local_path: '/etc/passwd-dir' },
          { key: 'gpt-oss-120b', name: 'Shadow', repo: 'a/b' },
        ],
        knobs: { 'qwen3-32b-fp8': { 'max-model-len': 2048 }, 'gpt-oss-120b': { 'max-model-len': 'lots' } },
      }),
    )
    const catalog = make()
    expect(catalog.get('my-model').tags).toEqual(['custom'])
    expect(statusOf(() => catalog.get('evil'))).toBe(404)
    expect(statusOf(() => catalog.get('outside'))).toBe(404)
    expect(catalog.get('gpt-oss-120b').def.name).toBe('gpt-oss 120B (MXFP4)')
    expect(catalog.get('qwen3-32b-fp8').effectiveKnobs['max-model-len']).toBe(2048)
    for (const key of ['evil', 'outside', 'gpt-oss-120b'])
      expect(warnLines().some((l) => /invalid override entry skipped/.test(l) && l.includes(`"entry":"${key}"`))).toBe(
        true,
      )
    expect(warnLines().some((l) => l.includes('"entry":"gpt-oss-120b"') && /knob/.test(l))).toBe(true)
    // A later write keeps the skipped entries verbatim for the operator to fix.
    catalog.setKnobs('my-model', { 'max-model-len': 1024 })
    const again = readOverrides()
    expect(again.models.map((m) => m.key)).toEqual(['my-model', 'evil', 'outside', 'gpt-oss-120b'])
    expect(again.knobs['gpt-oss-120b']).toEqual({ 'max-model-len': 'lots' })
  })

  it('a file that does not parse is kept aside and the bundled catalog still loads', () => {
    fs.writeFileSync(overridesFile(), 'models: [ {key: broken\n  : : :')
    const catalog = make()
    expect(catalog.list().length).toBeGreaterThanOrEqual(8)
    const keptAs = keptAsideCopy(overridesFile())
    expect(keptAs).not.toBeNull()
    expect(fs.existsSync(overridesFile())).toBe(false)
    expect(warnLines().some((l) => l.includes(`moved aside to ${keptAs}`))).toBe(true)
  })

  it('a file that parses to the wrong shape is kept aside too', () => {
    fs.writeFileSync(overridesFile(), '- just\n- a list\n')
    expect(
      make()
        .list()
        .every((e) => e.bundled),
    ).toBe(true)
    expect(keptAsideCopy(overridesFile())).not.toBeNull()
  })
})

describe('a damaged install', () => {
  it('a missing bundled file logs an error and the custom entries still load', () => {
    fs.writeFileSync(overridesFile(), YAML.stringify({ models: [repoModel] }))
    const catalog = new ModelCatalog({
      config,
      logger: createLogger({ sink }),
      bundledFile: path.join(dir, 'none.yaml'),
    })
    expect(catalog.list().map((e) => e.def.key)).toEqual(['my-model'])
    expect(warnLines().some((l) => /bundled model catalog unreadable/.test(l))).toBe(true)
  })
})
