import { describe, expect, it } from 'vitest'
import {
  dryRunScript,
  launchScript,
  parseRecipeYaml,
  pyFormat,
  pyNumber,
  pyStr,
} from '../../../src-main/models/launchScript'
import type { ScriptRecipe } from '../../../src-main/models/launchScript'

import { dryRuns as runs, upstreamRecipe } from '../../helpers/upstreamRecipes'

function readRecipe(rel: string): ScriptRecipe {
  const doc = parseRecipeYaml(upstreamRecipe(rel)) as Record<string, unknown>
  const render = (m: unknown): Record<string, string> =>
    Object.fromEntries(Object.entries((m ?? {}) as Record<string, unknown>).map(([k, v]) => [k, pyStr(v)]))
  return { name: pyStr(doc.name), command: doc.command as string, defaults: render(doc.defaults), env: render(doc.env) }
}

/** The runner's own reading of its command line, for the flags the recordings use. */
function optionsOf(args: readonly string[]): Parameters<typeof launchScript>[1] {
  const cut = args.indexOf('--')
  const own = cut === -1 ? args : args.slice(0, cut)
  const value = (flag: string): string | undefined => {
    const i = own.indexOf(flag)
    return i === -1 ? undefined : own[i + 1]
  }
  const overrides: Record<string, string> = {}
  const num = (flag: string, key: string, kind: 'int' | 'float'): void => {
    const v = value(flag)
    if (v !== undefined) overrides[key] = pyNumber(Number(v), kind)
  }
  num('--port', 'port', 'int')
  num('--tp', 'tensor_parallel', 'int')
  num('--gpu-mem', 'gpu_memory_utilization', 'float')
  num('--max-model-len', 'max_model_len', 'int')
  const nodes = value('-n')?.split(',') ?? []
  const solo = own.includes('--solo') || nodes.length <= 1
  if (solo && overrides.tensor_parallel === undefined) overrides.tensor_parallel = '1'
  return { overrides, solo, extraArgs: cut === -1 ? [] : args.slice(cut + 1), useRay: own.includes('--ray') && !solo }
}

describe("Tandem's launch script agrees with the launcher's runner (upstream 358bf26, recorded --dry-run)", () => {
  const ok = runs.filter((r) => r.exit === 0)
  it('covers every recorded recipe', () => {
    expect(new Set(runs.map((r) => r.recipe)).size).toBe(35)
    expect(ok.length).toBeGreaterThan(80)
  })
  it.each(ok.map((r) => [`${r.recipe} ${r.args.join(' ')}`, r] as const))('%s', (_label, run) => {
    const expected = dryRunScript(run.stdout)
    expect(expected).not.toBeNull()
    expect(launchScript(readRecipe(run.recipe), optionsOf(run.args))).toBe(expected)
  })
})

describe('the runner reading rules', () => {
  it('keeps the last of a duplicated key, as PyYAML does', () => {
    expect(parseRecipeYaml('container: a\ncontainer: b\n')).toEqual({ container: 'b' })
  })
  it('renders values as Python str() does', () => {
    const doc = parseRecipeYaml('a: 0.90\nb: 1.0\nc: 8\nd: yes\ne: ~\n') as Record<string, unknown>
    expect(Object.values(doc).map(pyStr)).toEqual(['0.9', '1.0', '8', 'True', 'None'])
  })
  it('formats like str.format and refuses what recipes never use', () => {
    expect(pyFormat('\'{{"a":{x}}}\'', { x: '1' })).toBe(`'{"a":1}'`)
    expect(() => pyFormat('{x!r}', { x: '1' })).toThrow(/not a plain name/)
    expect(() => pyFormat('{y}', {})).toThrow(/missing parameter/)
    expect(() => pyFormat('a } b', {})).toThrow(/Single '}'/)
  })
  it('exports env values inside double quotes, as the runner writes them', () => {
    const s = launchScript(
      { name: 'n', command: 'vllm serve m', defaults: {}, env: { A: '{"k":"v"}', B: '$HOME/x' } },
      { overrides: {}, solo: true, extraArgs: [], useRay: false },
    )
    expect(s).toContain('export A="{"k":"v"}"\nexport B="$HOME/x"\n')
  })
})
