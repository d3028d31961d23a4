import { describe, expect, it } from 'vitest'
import { PrebuiltInstallInput } from '../../../src-main/contract/services'
import { PullProgress, registryOf, runCommand } from '../../../src-main/services/prebuilt'

describe('prebuilt helpers', () => {
  it('reads docker pull layer lines into bytes done and total', () => {
    const p = new PullProgress()
    expect(p.feed('1.0.0: Pulling from nim/nvidia/parakeet')).toBe(false)
    expect(p.feed('aaaaaaaaaaaa: Pulling fs layer')).toBe(false)
    expect(p.feed('bbbbbbbbbbbb: Waiting')).toBe(true)
    expect(p.feed('aaaaaaaaaaaa: Downloading [=====>        ]  25.0MB/100.0MB')).toBe(true)
    expect(p.feed('bbbbbbbbbbbb: Downloading [>              ]  512.0kB/100.0MB')).toBe(true)
    expect(p.figures()).toEqual({ bytes_done: 25_512_000, bytes_total: 200_000_000, percent: 12.8 })
    expect(p.feed('aaaaaaaaaaaa: Pull complete')).toBe(false)
    expect(p.figures()?.bytes_done).toBe(100_512_000)
  })

  it('finds the registry of an image', () => {
    expect(registryOf('nvcr.io/nim/nvidia/parakeet:1')).toBe('nvcr.io')
    expect(registryOf('localhost:5000/x')).toBe('localhost:5000')
    expect(registryOf('library/ubuntu')).toBeNull()
    expect(registryOf('ubuntu')).toBeNull()
  })

  it('builds a run command that quotes every value and reads the key from stdin only', () => {
    const input = PrebuiltInstallInput.parse({
      image: 'nvcr.io/nim/nvidia/parakeet:1',
      container: 'parakeet',
      volume: 'cache',
      cache_path: '/opt/nim/.cache',
      port: 9100,
      container_port: 9000,
      env: { NOTE: `it's "$HOME"\nnext` },
    })
    const cmd = runCommand(input, true)
    expect(cmd).toBe(
      `NGC_API_KEY="$(cat)" docker run -d --name 'parakeet' --gpus all -p '9100:9000' -v 'cache:/opt/nim/.cache' ` +
        `-e 'NOTE=it'\\''s "$HOME"\nnext' -e NGC_API_KEY --restart unless-stopped 'nvcr.io/nim/nvidia/parakeet:1'`,
    )
    expect(runCommand(input, false)).not.toContain('NGC_API_KEY')
  })
})
