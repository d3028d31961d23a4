import { describe, expect, it } from 'vitest'
import { gatewayEngineArgs } from '../../../src-main/models/gatewayEngineArgs'

/**
 * The arguments every Tandem-launched engine gets for the gateway (issue 41): the catalog key as one
 * more served name, so a request naming it reaches the engine byte for byte, and forced stream usage.
 * vLLM's facts behind them: test/fixtures/vllm/README.md.
 */
describe('gatewayEngineArgs', () => {
  it('names the model by its served name first and its catalog key, and forces stream usage', () => {
    expect(gatewayEngineArgs(['--max-num-seqs', '4'], 'org/big', 'big')).toEqual([
      '--max-num-seqs',
      '4',
      '--served-model-name',
      'org/big',
      'big',
      '--enable-force-include-usage',
    ])
  })

  it("gathers an entry's own names into the one list vLLM reads (a second flag would replace the first)", () => {
    for (const own of [
      ['--served-model-name', 'short', 'alias', '--max-num-seqs', '4'],
      ['--served_model_name=short alias', '--max-num-seqs', '4'],
    ])
      expect(gatewayEngineArgs(own, 'short', 'big')).toEqual([
        '--max-num-seqs',
        '4',
        '--served-model-name',
        'short',
        'alias',
        'big',
        '--enable-force-include-usage',
      ])
  })

  it('adds neither a key the names hold already nor the usage flag twice', () => {
    expect(gatewayEngineArgs(['--enable-force-include-usage'], 'big', 'big')).toEqual([
      '--enable-force-include-usage',
      '--served-model-name',
      'big',
    ])
  })
})
