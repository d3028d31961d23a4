import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { atomicWriteFile, readStateFile, SerialQueue } from '../../../src-main/core/files'

describe('state files', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-files-'))

  it('writes atomically, leaves no temp file, and applies the mode', () => {
    const f = path.join(dir, 'nested', 'state.json')
    atomicWriteFile(f, '{"a":1}', { mode: 0o600 })
    atomicWriteFile(f, '{"a":2}', { mode: 0o600 })
    expect(fs.readFileSync(f, 'utf8')).toBe('{"a":2}')
    expect(fs.statSync(f).mode & 0o777).toBe(0o600)
    expect(fs.readdirSync(path.dirname(f))).toEqual(['state.json'])
  })

  it('reports a missing file, parses a good one, and keeps a corrupt one aside', () => {
    const f = path.join(dir, 'x.json')
    expect(readStateFile(f, JSON.parse).kind).toBe('missing')
    fs.writeFileSync(f, '[1,2]')
    expect(readStateFile(f, JSON.parse)).toEqual({ kind: 'ok', value: [1, 2] })
    fs.writeFileSync(f, '[1,')
    const r = readStateFile(f, JSON.parse)
    expect(r.kind).toBe('corrupt')
    expect(fs.readFileSync(`${f}.corrupt`, 'utf8')).toBe('[1,')
  })

  it('serialises read-modify-write so no update is lost', async () => {
    const q = new SerialQueue()
    let value = 0
    await Promise.all(
      Array.from({ length: 50 }, () =>
        q.run(async () => {
          const read = value
          await new Promise((r) => setImmediate(r))
          value = read + 1
        }),
      ),
    )
    expect(value).toBe(50)
  })

  it('keeps the queue going after a failing task', async () => {
    const q = new SerialQueue()
    await expect(q.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    await expect(q.run(() => 7)).resolves.toBe(7)
  })
})
