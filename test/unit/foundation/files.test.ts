import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  atomicWriteFile,
  moveAsideCorrupt,
  readStateFile,
  replacedStateFileMessage,
  SerialQueue,
} from '../../../src-main/lib/files'

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
    const r = readStateFile(f, JSON.parse, Date.UTC(2026, 10, 27, 21, 50, 12))
    expect(r).toMatchObject({ kind: 'corrupt', keptAs: `${f}.corrupt-20261127T215012Z` })
    expect(fs.readFileSync(`${f}.corrupt-20261127T215012Z`, 'utf8')).toBe('[1,')
    expect(fs.existsSync(f)).toBe(false)
  })

  it('never overwrites a copy kept aside earlier, even within the same second', () => {
    const f = path.join(dir, 'twice.json')
    const at = Date.UTC(2026, 10, 27, 22, 0, 0)
    fs.writeFileSync(f, 'first')
    expect(moveAsideCorrupt(f, at)).toBe(`${f}.corrupt-20261127T220000Z`)
    fs.writeFileSync(f, 'second')
    expect(moveAsideCorrupt(f, at)).toBe(`${f}.corrupt-20261127T220000Z-2`)
    expect(fs.readFileSync(`${f}.corrupt-20261127T220000Z`, 'utf8')).toBe('first')
    expect(fs.readFileSync(`${f}.corrupt-20261127T220000Z-2`, 'utf8')).toBe('second')
    expect(moveAsideCorrupt(path.join(dir, 'absent.json'), at)).toBeNull()
  })

  it('words a replaced state file with both paths', () => {
    expect(
      replacedStateFileMessage(
        'hardware history',
        '/d/h.json',
        { error: 'bad', keptAs: '/d/h.json.corrupt-X' },
        'the charts start empty',
      ),
    ).toBe('hardware history /d/h.json is malformed (bad); moved aside to /d/h.json.corrupt-X; the charts start empty')
    expect(replacedStateFileMessage('x', '/d/x', { error: 'bad', keptAs: null }, 'y')).toContain(
      'could not be moved aside',
    )
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
