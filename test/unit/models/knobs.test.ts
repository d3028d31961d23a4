import { describe, expect, it } from 'vitest'
import { effectiveKnobs, knobsToArgs, seedKnobs } from '../../../src-main/models/knobs'

describe('knobsToArgs', () => {
  it('strips every spelling of max-model-len and appends the knob value', () => {
    const spellings = [
      ['--max-model-len', '4096'],
      ['--max-model-len=4096'],
      ['--max_model_len', '4096'],
      ['--max_model_len=4096'],
      ['--max-model_len', '4096'],
    ]
    for (const s of spellings) {
      const args = ['--trust-remote-code', ...s, '--enable-auto-tool-choice']
      expect(knobsToArgs(args, { 'max-model-len': 32768 })).toEqual([
        '--trust-remote-code',
        '--enable-auto-tool-choice',
        '--max-model-len',
        '32768',
      ])
    }
  })

  it('strips repeated occurrences and keeps unrelated flags that share a prefix', () => {
    const args = ['--max-model-len', '1', '--max-model-len-extra', 'x', '--max_model_len=2', '--max-num-seqs', '8']
    expect(knobsToArgs(args, { 'max-model-len': 9000 })).toEqual([
      '--max-model-len-extra',
      'x',
      '--max-num-seqs',
      '8',
      '--max-model-len',
      '9000',
    ])
  })

  it('gpu-memory-utilization replaces both spellings', () => {
    expect(knobsToArgs(['--gpu_memory_utilization=0.7', '-tp', '2'], { 'gpu-memory-utilization': 0.85 })).toEqual([
      '-tp',
      '2',
      '--gpu-memory-utilization',
      '0.85',
    ])
  })

  it('prefix caching: either boolean spelling is replaced by the knob', () => {
    const on = ['--enable-prefix-caching', '--x']
    const off = ['--no-enable-prefix-caching', '--x']
    const under = ['--enable_prefix_caching', '--x']
    expect(knobsToArgs(on, { 'prefix-caching': false })).toEqual(['--x', '--no-enable-prefix-caching'])
    expect(knobsToArgs(off, { 'prefix-caching': true })).toEqual(['--x', '--enable-prefix-caching'])
    expect(knobsToArgs(under, { 'prefix-caching': false })).toEqual(['--x', '--no-enable-prefix-caching'])
    // A boolean flag never swallows the next token as its value.
    expect(knobsToArgs(['--enable-prefix-caching', 'served'], { 'prefix-caching': true })).toEqual([
      'served',
      '--enable-prefix-caching',
    ])
  })

  it('fastsafetensors is --load-format fastsafetensors; off keeps another load format', () => {
    expect(knobsToArgs(['--load-format', 'auto'], { fastsafetensors: true })).toEqual([
      '--load-format',
      'fastsafetensors',
    ])
    expect(knobsToArgs(['--load_format=fastsafetensors', '--y'], { fastsafetensors: false })).toEqual(['--y'])
    expect(knobsToArgs(['--load-format', 'instanttensor'], { fastsafetensors: false })).toEqual([
      '--load-format',
      'instanttensor',
    ])
  })

  it('FP8 KV cache is --kv-cache-dtype fp8; off strips only fp8 variants', () => {
    expect(knobsToArgs(['--kv-cache-dtype=auto'], { 'fp8-kv-cache': true })).toEqual(['--kv-cache-dtype', 'fp8'])
    expect(knobsToArgs(['--kv_cache_dtype', 'fp8_e4m3', '--z'], { 'fp8-kv-cache': false })).toEqual(['--z'])
    expect(knobsToArgs(['--kv-cache-dtype', 'bfloat16'], { 'fp8-kv-cache': false })).toEqual([
      '--kv-cache-dtype',
      'bfloat16',
    ])
  })

  it('a JSON value next to a knob flag is left alone', () => {
    const spec = '{"method":"mtp","num_speculative_tokens":4}'
    expect(knobsToArgs(['--speculative-config', spec, '--max-model-len', '10'], { 'max-model-len': 20 })).toEqual([
      '--speculative-config',
      spec,
      '--max-model-len',
      '20',
    ])
  })

  it('no knobs: the args are unchanged', () => {
    const args = ['--max-model-len', '4096', '--enable-prefix-caching']
    expect(knobsToArgs(args, {})).toEqual(args)
  })
})

describe('seedKnobs', () => {
  it('reads each knob back from the args, last occurrence wins', () => {
    expect(
      seedKnobs([
        '--max_model_len=1000',
        '--max-model-len',
        '131072',
        '--gpu-memory-utilization',
        '0.7',
        '--load-format',
        'fastsafetensors',
        '--kv-cache-dtype',
        'fp8',
        '--enable-prefix-caching',
        '--no-enable-prefix-caching',
      ]),
    ).toEqual({
      'max-model-len': 131072,
      'gpu-memory-utilization': 0.7,
      fastsafetensors: true,
      'fp8-kv-cache': true,
      'prefix-caching': false,
    })
  })

  it('absent flags leave knobs unset; other values read as off', () => {
    expect(seedKnobs(['--load-format', 'auto', '--kv-cache-dtype=bfloat16'])).toEqual({
      fastsafetensors: false,
      'fp8-kv-cache': false,
    })
    expect(seedKnobs([])).toEqual({})
  })

  it('effective knobs: the override wins over the seeded value', () => {
    expect(effectiveKnobs(['--max-model-len', '4096', '--enable-prefix-caching'], { 'max-model-len': 8192 })).toEqual({
      'max-model-len': 8192,
      'prefix-caching': true,
    })
  })
})
