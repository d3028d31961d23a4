import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { SessionStore } from '../../../src-main/app/sessions'
import { toPublicError } from '../../../src-main/app/invoke'
import { ApiError } from '../../../src-main/contract/errors'
import { ManualClock } from '../../../src-main/lib/clock'
import { atomicWriteFile, StorageFull } from '../../../src-main/lib/files'
import { createLogger, MemorySink } from '../../../src-main/lib/logger'
import { LOW_DISK_BYTES, storageHealth } from '../../../src-main/system/storageHealth'
import { failWritesOf, fsError } from '../../helpers/fullDisk'

const made: string[] = []
const tempDir = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-full-'))
  made.push(dir)
  return dir
}

afterEach(() => {
  vi.restoreAllMocks()
})
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

describe('an atomic write on a full volume (issue 33 #6)', () => {
  it('removes its temp file at once, keeps the old content, and says what could not be written where', () => {
    const dir = tempDir()
    const file = path.join(dir, 'settings.json')
    atomicWriteFile(file, '{"old":true}')
    failWritesOf(['settings.json'])
    let caught: unknown
    try {
      atomicWriteFile(file, '{"new":true}', { role: 'settings' })
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(StorageFull)
    expect((caught as StorageFull).message).toBe(
      `no space left on the volume holding ${dir}: could not write the settings`,
    )
    expect(fs.readdirSync(dir)).toEqual(['settings.json'])
    expect(fs.readFileSync(file, 'utf8')).toBe('{"old":true}')
  })

  it('never puts a short write in place', () => {
    const dir = tempDir()
    const file = path.join(dir, 'state.json')
    atomicWriteFile(file, 'old')
    const realWrite = fs.writeSync
    let calls = 0
    // The volume fills mid-write: the first write stores half and says so, the next fails.
    vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, buf: Buffer) => {
      calls += 1
      if (calls > 1) throw fsError('ENOSPC', 'write')
      return realWrite(fd, buf, 0, Math.floor(buf.length / 2))
    }) as typeof fs.writeSync)
    expect(() => atomicWriteFile(file, 'a much longer new content')).toThrow(StorageFull)
    expect(fs.readFileSync(file, 'utf8')).toBe('old')
    expect(fs.readdirSync(dir)).toEqual(['state.json'])
  })

  it('names a quota and a read-only volume too, and leaves other errors as they are', () => {
    const dir = tempDir()
    failWritesOf(['a.json'], 'EDQUOT')
    expect(() => atomicWriteFile(path.join(dir, 'a.json'), 'x', { role: 'sessions' })).toThrow(
      `disk quota exceeded on the volume holding ${dir}: could not write the sessions`,
    )
    vi.restoreAllMocks()
    vi.spyOn(fs, 'renameSync').mockImplementation(() => {
      throw fsError('EROFS', 'rename')
    })
    expect(() => atomicWriteFile(path.join(dir, 'b.json'), 'x')).toThrow(
      `read-only file system on the volume holding ${dir}: could not write b.json`,
    )
    vi.restoreAllMocks()
    vi.spyOn(fs, 'renameSync').mockImplementation(() => {
      throw fsError('EACCES', 'rename')
    })
    expect(() => atomicWriteFile(path.join(dir, 'c.json'), 'x')).toThrow(/EACCES/)
    expect(fs.readdirSync(dir)).toEqual([])
  })

  it('is answered 507 Insufficient Storage with the volume and the role', () => {
    const logger = createLogger({ sink: new MemorySink() })
    const e = toPublicError(new StorageFull('ENOSPC', '/data/tandem/settings.json', 'settings'), logger)
    expect(e).toBeInstanceOf(ApiError)
    expect([e.status, e.code]).toEqual([507, 'insufficient_storage'])
    expect(e.message).toBe('no space left on the volume holding /data/tandem: could not write the settings')
  })
})

describe('admin sessions when sessions.json cannot be written (issue 33 #6)', () => {
  it('logs in from memory, says so once, and writes the file again once it can', () => {
    const dir = tempDir()
    const file = path.join(dir, 'sessions.json')
    const sink = new MemorySink()
    const store = new SessionStore({
      file,
      adminToken: 'admin-token-aaaaaaaaaaaa',
      clock: new ManualClock(),
      logger: createLogger({ sink }),
    })
    failWritesOf(['sessions.json'])
    const first = store.issue()
    const second = store.issue()
    expect(store.verify(first.value)).toBe(true)
    expect(store.verify(second.value)).toBe(true)
    store.revoke(first.value)
    expect(store.verify(first.value)).toBe(false)
    const warnings = sink.lines.filter((l) => l.includes('sessions are kept in memory'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('no space left')
    expect(fs.readdirSync(dir)).toEqual([])

    vi.restoreAllMocks()
    const third = store.issue()
    expect(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).sessions)).toHaveLength(2)
    expect(store.verify(third.value)).toBe(true)
    expect(sink.lines.filter((l) => l.includes('sessions.json is written again'))).toHaveLength(1)
  })
})

describe('storage health (issue 33 #6)', () => {
  const GiB = 1024 ** 3
  const at = (free: number) => async () => ({ bavail: free / 4096, bsize: 4096, blocks: (500 * GiB) / 4096 })

  it('is degraded when DATA_DIR has less than 1 GiB free, with no path in the answer', async () => {
    const health = storageHealth({ dataDir: '/data/tandem', clock: new ManualClock(), statfs: at(512 * 1024 ** 2) })
    const h = await health()
    expect(h.state).toBe('degraded')
    expect(h.reason).toBe(
      'DATA_DIR has 512 MiB free, under the 1024 MiB Tandem keeps: settings, sessions and uploads may fail to save',
    )
    expect(h.remedy).toMatch(/free space on the volume holding DATA_DIR/i)
    expect(JSON.stringify(h)).not.toContain('/data/tandem')
    expect(LOW_DISK_BYTES).toBe(GiB)
  })

  it('is ok above the threshold, degraded when the free space cannot be read, and re-reads at most every 5 s', async () => {
    const clock = new ManualClock()
    let free = 10 * GiB
    let reads = 0
    const health = storageHealth({
      dataDir: '/data/tandem',
      clock,
      statfs: async () => {
        reads += 1
        if (free < 0) throw fsError('ENOENT', 'statfs')
        return at(free)()
      },
    })
    expect(await health()).toEqual({ state: 'ok', reason: null, remedy: null })
    free = 100
    expect((await health()).state).toBe('ok')
    expect(reads).toBe(1)
    clock.advance(5000)
    expect((await health()).state).toBe('degraded')
    free = -1
    clock.advance(5000)
    expect(await health()).toMatchObject({
      state: 'degraded',
      reason: 'free space of DATA_DIR cannot be read (ENOENT)',
    })
  })

  it('is degraded, not waited for, when the volume does not answer (a hung network mount)', async () => {
    vi.useFakeTimers()
    try {
      const health = storageHealth({
        dataDir: '/data/tandem',
        clock: new ManualClock(),
        statfs: () => new Promise(() => {}),
      })
      const answer = health()
      await vi.advanceTimersByTimeAsync(2000)
      expect(await answer).toMatchObject({
        state: 'degraded',
        reason: 'free space of DATA_DIR cannot be read (ETIMEDOUT)',
      })
    } finally {
      vi.useRealTimers()
    }
  })
})
