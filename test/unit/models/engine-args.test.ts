import { describe, expect, it } from 'vitest'
import { engineArgProblem, validateModelDef } from '../../../src-main/models/catalog'

/** The catalog's rule for engine arguments: every one is single-quoted at use, so JSON may hold `<think>`. */
describe('engine arguments with < and >', () => {
  const reasoning = '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"<think>","reasoning_end_str":"</think>"}'

  it('accepts < and > inside the strings of a JSON value, bare or after =', () => {
    expect(engineArgProblem(reasoning)).toBeNull()
    expect(engineArgProblem(`--reasoning-config=${reasoning}`)).toBeNull()
    expect(engineArgProblem('{"stop":["<eos>"]}')).toBeNull()
  })

  it('accepts a stop token with | inside a JSON string (chat-ML end markers)', () => {
    expect(engineArgProblem('{"stop":["<|im_end|>","<|endoftext|>"]}')).toBeNull()
    expect(engineArgProblem('x|y')).toMatch(/safe set/)
  })

  it('keeps the JSON byte-exact through the validator', () => {
    const def = validateModelDef(
      { key: 'r', name: 'R', repo: 'acme/m', engine_args: ['--reasoning-config', reasoning] },
      ['/data'],
    )
    expect(def.engine_args).toEqual(['--reasoning-config', reasoning])
  })

  const refused = [
    '<think>',
    'a>b',
    '--x=<y',
    '{"a":1}>out',
    '{"a":"x"<y}',
    '"<x',
    '{"a":"$(id)"}',
    '{"a":"`id`"}',
    '{"a":"x;y"}',
    '{"a":"it\'s"}',
    '{"a":"x\\"<y"}',
  ]
  for (const arg of refused) {
    it(`still refuses ${arg}`, () => expect(engineArgProblem(arg)).toMatch(/safe set|not a valid flag/))
  }
})
