import { describe, expect, it } from 'vitest'
import {
  memberBytes,
  memberIsTrue,
  memberNumber,
  memberString,
  memberValue,
  membersFromEnd,
  scanJson,
} from '../../../src-main/gateway/jsonScan'

/**
 * The scanner against JSON.parse, the judge it must agree with: every text JSON.parse accepts is
 * valid to the scanner with the same top-level members, and every text it refuses is refused.
 * Handwritten edge cases first, then thousands of mutations of valid bodies (a seeded generator,
 * so a failure reproduces).
 */

const WANTED = ['model', 'stream', 'stream_options', 'usage'].map((k) => Buffer.from(k))
const MAX_DEPTH = 6

function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0
  const children = Array.isArray(v) ? v : Object.values(v)
  return 1 + children.reduce((m: number, c) => Math.max(m, depthOf(c)), 0)
}

/** What JSON.parse says about the bytes, decoded as the relay decoded them (UTF-8). */
function judge(buf: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(buf.toString('utf8')) }
  } catch {
    return { ok: false }
  }
}

function agree(buf: Buffer): void {
  const scan = scanJson(buf, MAX_DEPTH, WANTED)
  const ref = judge(buf)
  const label = JSON.stringify(buf.toString('latin1'))
  if (!ref.ok) {
    expect(scan.error, label).not.toBeNull()
    return
  }
  if (depthOf(ref.value) > MAX_DEPTH) {
    expect(scan.error, label).toBe('too_deep')
    return
  }
  expect(scan.error, label).toBeNull()
  const isObject = ref.value !== null && typeof ref.value === 'object' && !Array.isArray(ref.value)
  expect(scan.isObject, label).toBe(isObject)
  if (!isObject) return
  const obj = ref.value as Record<string, unknown>
  WANTED.forEach((k, index) => {
    const key = k.toString()
    const has = Object.prototype.hasOwnProperty.call(obj, key)
    expect(memberValue(buf, scan, index), `${label} ${key}`).toEqual(has ? obj[key] : undefined)
    expect(memberNumber(buf, scan, index), `${label} ${key}`).toEqual(typeof obj[key] === 'number' ? obj[key] : null)
    const bytes = memberBytes(buf, scan, index)
    expect(bytes === null ? undefined : JSON.parse(Buffer.from(bytes).toString()), label).toEqual(obj[key])
  })
  expect(memberString(buf, scan, 0), label).toBe(typeof obj.model === 'string' ? obj.model : null)
  expect(memberIsTrue(buf, scan, 1), label).toBe(obj.stream === true)
}

const EDGE_CASES = [
  '',
  ' ',
  '{}',
  '[]',
  '{"model":"m","stream":true}',
  ' \t\r\n{ "model" : "m" , "stream" : false } \n',
  '{"model":"a","model":"b"}',
  '{"mod\\u0065l":"escaped key","stream":true}',
  '{"model":"sim\\/Qwen \\"q\\" \\u00e9 \\ud83d\\ude00"}',
  '{"model":"é ü 日本"}',
  '{"model":1,"stream":"true"}',
  '{"model":null,"stream":null,"stream_options":null}',
  '{"stream_options":{"include_usage":false,"nested":{"model":"inner"}},"model":"outer"}',
  '{"a":{"model":"inner","stream":true}}',
  '{"a":["model","stream"],"b":"model"}',
  '{"usage":{"prompt_tokens":2,"completion_tokens":4}}',
  '{"model":123456789012345,"stream":-123456789012345,"usage":1234567890123456789}',
  '{"model":-0,"stream":0,"usage":1.5e2,"stream_options":-12E-1}',
  '"a string"',
  '42',
  'true',
  'null',
  '[{"model":"in an array"}]',
  '{"n":-0}',
  '{"n":-0.5e-7}',
  '{"n":1E+2}',
  '{"n":01}',
  '{"n":1.}',
  '{"n":.5}',
  '{"n":-}',
  '{"n":1e}',
  '{"n":+1}',
  '{"n":0x10}',
  '{"n":Infinity}',
  '{"n":NaN}',
  '{"a":1,}',
  '[1,]',
  '{,}',
  '{"a"}',
  '{"a":}',
  '{"a" 1}',
  '{a:1}',
  "{'a':1}",
  '{"a":1}}',
  '{"a":1}{',
  '{"a":[1,2}',
  '{"a":tru}',
  '{"a":nul}',
  '{"a":falsey}',
  '{"a":"\\x"}',
  '{"a":"\\u12"}',
  '{"a":"\\u12G4"}',
  '{"a":"unterminated}',
  '{"a":"tab\there"}',
  '{"a":"nul\u0000"}',
  '{"a":"del\u007f"}',
  '\ufeff{"a":1}',
  '{"a":1}\u00a0',
  '{"a":1}\u000b',
  '{"a":1}\f',
  '/* c */{"a":1}',
  '[[[[[[1]]]]]]',
  '[[[[[[[1]]]]]]]',
  '[[[[[[[',
  '{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}',
  '{"a":{"b":{"c":{"d":{"e":{"f":{}}}}}}}',
]

describe('scanJson', () => {
  it('agrees with JSON.parse on every handwritten edge case', () => {
    for (const text of EDGE_CASES) agree(Buffer.from(text, 'utf8'))
  })

  it('agrees with JSON.parse on bytes that are not UTF-8', () => {
    const cases = [
      Buffer.concat([Buffer.from('{"model":"'), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from('"}')]),
      Buffer.concat([Buffer.from('{"model":"x"}'), Buffer.from([0x80])]),
      Buffer.concat([Buffer.from([0xc3]), Buffer.from('{"a":1}')]),
      Buffer.concat([Buffer.from('{"a":'), Buffer.from([0xe2, 0x80, 0x8b]), Buffer.from('1}')]),
    ]
    for (const buf of cases) agree(buf)
  })

  it('agrees with JSON.parse on 20,000 mutations of valid bodies', () => {
    let seed = 0x2545f491
    const next = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed % n
    }
    const alphabet = '{}[]",:\\ 0123456789.-+eEtrufalsn\t\n\r/"ux'.split('').map((c) => c.charCodeAt(0))
    alphabet.push(0x00, 0x1f, 0x80, 0xc3, 0xff)
    const seeds = EDGE_CASES.filter((t) => judge(Buffer.from(t)).ok).map((t) => Buffer.from(t))
    seeds.push(
      Buffer.from(
        JSON.stringify({
          model: 'sim/Qwen3-8B-Instruct',
          messages: [{ role: 'user', content: 'hello "bench" \\ é' }],
          stream: true,
          stream_options: { include_usage: true },
          tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
          temperature: 0.7,
          max_tokens: 200,
        }),
      ),
    )
    for (let round = 0; round < 20_000; round++) {
      const bytes = [...seeds[next(seeds.length)]!]
      for (let m = 1 + next(3); m > 0; m--) {
        const at = next(bytes.length + 1)
        const op = next(3)
        const b = alphabet[next(alphabet.length)]!
        if (op === 0) bytes.splice(at, 0, b)
        else if (op === 1) bytes.splice(at, 1)
        else bytes[Math.min(at, bytes.length - 1)] = b
      }
      agree(Buffer.from(bytes))
    }
  })

  it('agrees with JSON.parse on long strings: each byte that may end a run, at every offset and alignment', () => {
    // Strings past 32 bytes are searched four bytes at a time; every kind of byte that ends a plain
    // run is put at each offset of a long one, in a Buffer starting at each of four alignments.
    const specials: number[][] = [
      [0x22], // the closing quote, early
      [0x5c, 0x22], // an escaped quote
      [0x5c, 0x5c], // an escaped backslash
      [0x5c, 0x75, 0x30, 0x30, 0x65, 0x39], // \u00e9
      [0x5c, 0x75, 0x30, 0x30], // a short \u escape
      [0x5c, 0x78], // an escape JSON has not
      [0x00],
      [0x09],
      [0x0a],
      [0x1f],
      [0x20],
      [0x7f],
      [0xc3, 0xa9],
      [0xff],
      [0x21, 0x23, 0x5b, 0x5d, 0x5e, 0x3c],
    ]
    const plain = Buffer.from('The quick brown fox jumps over the lazy dog again and again, ')
    let checked = 0
    for (const special of specials)
      for (let at = 0; at <= 70; at++)
        for (let shift = 0; shift < 4; shift++) {
          const body = Buffer.concat([
            Buffer.from('{"model":"'),
            plain.subarray(0, at),
            Buffer.from(special),
            plain,
            Buffer.from('","stream":true}'),
          ])
          const backing = Buffer.alloc(body.length + 8, 0x22)
          body.copy(backing, shift)
          agree(backing.subarray(shift, shift + body.length))
          checked++
        }
    expect(checked).toBe(specials.length * 71 * 4)
  })

  it('agrees with JSON.parse on a long key, and on a long string that never ends', () => {
    const long = 'k'.repeat(200)
    agree(Buffer.from(`{"${long}":1,"model":"${long}"}`))
    agree(Buffer.from(`{"model":"${long}`))
    agree(Buffer.from(`{"model":"${long}\\`))
    agree(Buffer.from(`{"model":"${long}\\"}`))
    const buf = Buffer.from(`{"${long}":1,"model":"${long}é"}`)
    const scan = scanJson(buf, MAX_DEPTH, WANTED)
    expect(scan.error).toBeNull()
    expect(scan.spans.slice(0, 2)).toEqual([buf.indexOf('"model":') + 8, buf.length - 1])
    expect(memberString(buf, scan, 0)).toBe(`${long}é`)
  })

  it('reads a member of a Buffer that is a slice of a larger one', () => {
    const big = Buffer.from('xxxxx{"model":"sliced","stream":true}yyy')
    const buf = big.subarray(5, big.length - 3)
    const scan = scanJson(buf, MAX_DEPTH, WANTED)
    expect(scan.error).toBeNull()
    expect(memberString(buf, scan, 0)).toBe('sliced')
    expect(memberIsTrue(buf, scan, 1)).toBe(true)
  })

  it('nests as deep as a text goes when the limit allows it, in one pass without recursion', () => {
    const deep = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000))
    expect(scanJson(deep, 200_000, []).error).toBeNull()
    expect(scanJson(deep, 256, []).error).toBe('too_deep')
    // A shallow text scanned after the deep one is read as before (the deep scan's stack was its own).
    agree(Buffer.from('{"a":[{"b":[1]}],"model":"after","stream":true}'))
  })
})

/** A seeded generator of JSON values with the strings a tail reader can trip on. */
function randomJson(seed: number): () => string {
  const next = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed % n
  }
  const pieces = ['a', '"', '\\', '}', ']', '{', '[', ':', ',', 'é', '\n', '"usage":{', ' ', '\\"']
  const str = (): string => Array.from({ length: next(6) }, () => pieces[next(pieces.length)]).join('')
  const names = ['usage', 'duration', 'choices', 'model', 'x']
  const value = (depth: number): unknown => {
    const k = next(depth > 3 ? 4 : 7)
    if (k === 0) return str()
    if (k === 1) return next(2) === 0 ? next(100000) : -next(1000) / 7
    if (k === 2) return [true, false, null][next(3)]
    if (k === 3) return next(1e6) * 1e-3
    if (k === 4) return Array.from({ length: next(4) }, () => value(depth + 1))
    return Object.fromEntries(Array.from({ length: next(4) }, () => [names[next(names.length)]!, value(depth + 1)]))
  }
  return () => {
    // Members written by hand, so names can repeat (JSON.parse keeps the last) and be escaped.
    const members = Array.from({ length: next(6) }, () => {
      const name = names[next(names.length)]!
      const key =
        next(5) === 0
          ? JSON.stringify(name).replace(name[0]!, `\\u00${name.charCodeAt(0).toString(16)}`)
          : JSON.stringify(name)
      const space = [' ', '', '\n  ', '\t'][next(4)]!
      return `${space}${key}${space}:${space}${JSON.stringify(value(1), null, next(3) === 0 ? 2 : undefined)}${space}`
    })
    return `{${members.join(',')}}`
  }
}

describe('membersFromEnd', () => {
  const NAMES = ['usage', 'duration'].map((k) => Buffer.from(k))

  /** The members of `obj` named in NAMES as JSON.parse gives them, undefined for the absent ones. */
  const expected = (obj: unknown): unknown[] =>
    NAMES.map((k) =>
      obj !== null && typeof obj === 'object' && !Array.isArray(obj) && Object.hasOwn(obj, k.toString())
        ? (obj as Record<string, unknown>)[k.toString()]
        : undefined,
    )

  function agreeFromEnd(text: string): void {
    const buf = Buffer.from(text, 'utf8')
    const obj = JSON.parse(text) as Record<string, unknown>
    const found = membersFromEnd(buf, NAMES)
    expect(found, text).not.toBeNull()
    expect(
      NAMES.map((_, index) => memberValue(buf, found!, index)),
      text,
    ).toEqual(expected(obj))
    // The same members inside `usage`, read in the same walk back.
    const nested = membersFromEnd(buf, NAMES, 0, NAMES)
    expect(nested, text).not.toBeNull()
    expect(
      NAMES.map((_, index) => memberValue(buf, nested!.inner, index)),
      text,
    ).toEqual(expected(obj.usage))
  }

  it('finds the same members as JSON.parse in every valid object among the edge cases', () => {
    for (const text of EDGE_CASES) {
      const ref = judge(Buffer.from(text))
      if (!ref.ok || ref.value === null || typeof ref.value !== 'object' || Array.isArray(ref.value)) continue
      agreeFromEnd(text)
    }
  })

  it('finds the same members as JSON.parse in 5,000 generated objects: repeated and escaped names, quotes, backslashes and brackets inside strings', () => {
    const generate = randomJson(0x9e3779b9)
    for (let round = 0; round < 5_000; round++) agreeFromEnd(generate())
  })

  it('reads an answer from its end: what comes before its last members is not read', () => {
    const head = Buffer.from('{"choices":[' + '{"never read": "'.repeat(1000))
    const buf = Buffer.concat([head, Buffer.from('1,"usage":{"prompt_tokens":7,"completion_tokens":9}}')])
    const found = membersFromEnd(buf, [Buffer.from('usage')], 0, [Buffer.from('completion_tokens')])!
    expect(memberValue(buf, found, 0)).toEqual({ prompt_tokens: 7, completion_tokens: 9 })
    expect(memberValue(buf, found.inner, 0)).toBe(9)
    // A name that is not there sends it to the start, where the broken head ends the read.
    expect(membersFromEnd(buf, NAMES)).toBeNull()
  })

  it('gives null or spans inside the text, and never throws, on 20,000 mutations', () => {
    let seed = 0x51ed270b
    const next = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed % n
    }
    const generate = randomJson(0x2545f491)
    const alphabet = '{}[]",:\\ 0123456789.-eu\n'.split('').map((c) => c.charCodeAt(0))
    for (let round = 0; round < 20_000; round++) {
      const bytes = [...Buffer.from(generate())]
      for (let m = 1 + next(3); m > 0; m--) {
        const at = next(bytes.length + 1)
        const b = alphabet[next(alphabet.length)]!
        if (next(2) === 0) bytes.splice(at, 0, b)
        else bytes.splice(at, 1)
      }
      const buf = Buffer.from(bytes)
      const found = membersFromEnd(buf, NAMES, 0, NAMES)
      if (found === null) continue
      for (const { spans } of [found, found.inner])
        for (let k = 0; k < NAMES.length; k++) {
          const start = spans[k * 2]!
          const end = spans[k * 2 + 1]!
          if (start === -1) expect(end).toBe(-1)
          else expect(0 <= start && start < end && end <= buf.length).toBe(true)
        }
    }
  })

  it('reads long runs of backslashes and deep nesting without recursion', () => {
    const slashes = '\\'.repeat(50_000)
    const text = `{"usage":"${slashes}\\"${slashes}","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`
    agreeFromEnd(text)
  })
})
