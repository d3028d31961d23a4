import { describe, expect, it } from 'vitest'
import { homePath, remoteDir, shq, shqArgs } from '../../../src-main/ssh/quote'
import {
  ContainerName,
  EngineArg,
  EnvMap,
  ImageRef,
  LocalPath,
  MacAddress,
  ModelRepo,
  normalizeMac,
  ServiceName,
} from '../../../src-main/contract/schemas'

describe('shq', () => {
  it('wraps in single quotes and escapes embedded single quotes', () => {
    expect(shq('abc')).toBe("'abc'")
    expect(shq("it's")).toBe(`'it'\\''s'`)
    expect(shq('')).toBe("''")
    expect(shq(8888)).toBe("'8888'")
  })
  it('refuses NUL', () => {
    expect(() => shq('a\0b')).toThrow(/NUL/)
  })
  it('joins argv', () => {
    expect(shqArgs(['a b', "c'd"])).toBe(`'a b' 'c'\\''d'`)
  })
})

describe('homePath / remoteDir', () => {
  it('double-quotes $HOME paths from safe segments', () => {
    expect(homePath(['.cache', 'huggingface', 'hub', 'models--org--name'])).toBe(
      '"$HOME/.cache/huggingface/hub/models--org--name"',
    )
    expect(homePath([])).toBe('"$HOME"')
  })
  it('rejects unsafe segments', () => {
    for (const bad of ['..', '.', 'a b', 'a$b', 'a"b', 'a`b', 'a/b', '', 'a\\b'])
      expect(() => homePath([bad])).toThrow()
  })
  it('handles configured launcher directories', () => {
    expect(remoteDir('$HOME/spark-vllm-docker')).toBe('"$HOME/spark-vllm-docker"')
    expect(remoteDir('~/x/y')).toBe('"$HOME/x/y"')
    expect(remoteDir('/opt/launcher')).toBe("'/opt/launcher'")
    expect(() => remoteDir('relative/dir')).toThrow()
    expect(() => remoteDir('/opt/../etc')).toThrow()
  })
})

describe('validators', () => {
  it('model repos', () => {
    expect(ModelRepo.safeParse('Qwen/Qwen3-8B').success).toBe(true)
    for (const bad of ['Qwen', 'a/b/c', 'a/..', 'a/b;rm', '-x/y', 'a--b/c', 'a/$(id)'])
      expect(ModelRepo.safeParse(bad).success).toBe(false)
  })
  it('engine args are printable and trimmed', () => {
    expect(EngineArg.safeParse('--max-num-batched-tokens=16384').success).toBe(true)
    expect(EngineArg.safeParse('{"image": 2}').success).toBe(true)
    expect(EngineArg.safeParse('a\nb').success).toBe(false)
    expect(EngineArg.safeParse(' x').success).toBe(false)
  })
  it('images, containers, services, local paths', () => {
    expect(ImageRef.safeParse('nvcr.io/nim/riva-asr:2.19.0').success).toBe(true)
    expect(ImageRef.safeParse('localhost:5000/a/b@sha256:' + 'a'.repeat(64)).success).toBe(true)
    expect(ImageRef.safeParse('a b').success).toBe(false)
    expect(ImageRef.safeParse('img;id').success).toBe(false)
    expect(ContainerName.safeParse('vllm_node').success).toBe(true)
    expect(ContainerName.safeParse('-x').success).toBe(false)
    expect(ServiceName.safeParse('whisper-large').success).toBe(true)
    expect(ServiceName.safeParse('Bad Name').success).toBe(false)
    expect(LocalPath.safeParse('/models/my-model').success).toBe(true)
    expect(LocalPath.safeParse('/models/../etc').success).toBe(false)
    expect(LocalPath.safeParse('models').success).toBe(false)
  })
  it('MACs normalise from every common spelling', () => {
    for (const s of ['4C:BB:47:2E:91:0A', '4c-bb-47-2e-91-0a', '4cbb.472e.910a', '4cbb472e910a', ' 4c:bb:47:2e:91:0a '])
      expect(MacAddress.parse(s)).toBe('4c:bb:47:2e:91:0a')
    for (const bad of [
      '4c:bb:47:2e:91',
      '4c:bb-47:2e:91:0a',
      'zz:zz:zz:zz:zz:zz',
      '00:00:00:00:00:00',
      'ff:ff:ff:ff:ff:ff',
      '',
    ])
      expect(normalizeMac(bad)).toBeNull()
  })
})

describe('environment maps', () => {
  it('refuse more variables or bytes than one SSH exec request carries', () => {
    const big = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`V${i}`, 'x'.repeat(8000)]))
    expect(EnvMap.safeParse(big).success).toBe(false)
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, '1']))
    expect(EnvMap.safeParse(many).success).toBe(false)
    expect(EnvMap.safeParse({ A: 'x'.repeat(8000), B: 'y'.repeat(8000) }).success).toBe(true)
  })
})
