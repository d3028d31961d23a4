import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { licensingContract } from '../../../src-main/contract/licensing'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { LicensingBackups } from '../../../src-main/licensing/backups'
import { DB_CHECK_INTERVAL_MS, LicensingDbWatch } from '../../../src-main/licensing/dbWatch'
import { createLicensingModule, type LicensingModule } from '../../../src-main/licensing/module'
import { createLicensingServices } from '../../../src-main/licensing/licensingServices'
import { testCoreDeps } from '../../helpers/coreDeps'
import { seedLicensing } from '../../helpers/licensingSeed'
import { rowCount } from '../../helpers/sqliteRows'

const DAY = 86_400_000
const listProducts = (m: LicensingModule) =>
  m.handlers.licAdminProducts(licensingContract.licAdminProducts.input.parse({}), {} as never)
const PAGE = 4096

/** The same "random" bytes every run (a fixed LCG), so the damage is the same every run. */
function noise(n: number): Buffer {
  const b = Buffer.alloc(n)
  let x = 0x2545f491
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    b[i] = x >>> 24
  }
  return b
}

/** Writes noise over pages 3 and 4 (1-based) of `file`, in place. */
function damagePages3And4(file: string): void {
  const fd = fs.openSync(file, 'r+')
  try {
    fs.writeSync(fd, noise(2 * PAGE), 0, 2 * PAGE, 2 * PAGE)
  } finally {
    fs.closeSync(fd)
  }
}

describe('the licensing database at start and while running', () => {
  let dataDir: string
  let clock: ManualClock
  let logs: MemorySink
  const modules: LicensingModule[] = []

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-lic-damage-'))
    clock = new ManualClock(Date.UTC(2026, 10, 27, 21, 0))
    logs = new MemorySink()
  })
  afterEach(async () => {
    for (const m of modules.splice(0)) await m.stop?.()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const dbFile = (): string => path.join(dataDir, 'licensing.sqlite')
  const config = (env: Record<string, string> = {}) =>
    loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', ...env } })
  const deps = (env: Record<string, string> = {}) =>
    testCoreDeps({
      config: config(env),
      clock,
      logger: createLogger({ redactor: new Redactor(), sink: logs, level: 'debug', now: () => clock.now() }),
    })
  async function licensing(env: Record<string, string> = {}): Promise<LicensingModule> {
    const m = await createLicensingModule(deps(env))
    modules.push(m)
    return m
  }

  /** The shop of the finding: 3 products and 43 licences. Returns the WAL as it was before the clean close. */
  function populate(): Buffer {
    const s = createLicensingServices(deps())
    seedLicensing(s, {
      licenses: 43,
      products: [
        { slug: 'notes', name: 'Notes' },
        { slug: 'maps', name: 'Maps' },
        { slug: 'sums', name: 'Sums' },
      ],
    })
    const wal = fs.readFileSync(`${dbFile()}-wal`)
    s.close()
    return wal
  }

  it('a zero-length file with its WAL beside it is damage, not a new install: degraded, neither file written', async () => {
    const wal = populate()
    expect(wal.length).toBeGreaterThan(PAGE)
    fs.writeFileSync(dbFile(), '')
    fs.writeFileSync(`${dbFile()}-wal`, wal)
    const m = await licensing()
    await m.start?.()
    const health = m.health()
    expect(health.state).toBe('degraded')
    expect(health.reason).toMatch(/licensing\.sqlite is empty \(0 bytes\) while its write-ahead log/)
    expect(health.remedy).toMatch(/no backup/i)
    expect(fs.statSync(dbFile()).size).toBe(0)
    expect(fs.readFileSync(`${dbFile()}-wal`).equals(wal)).toBe(true)
    expect(logs.lines.some((l) => l.includes('failed its start check'))).toBe(true)
    await expect(listProducts(m)).rejects.toThrow(/0 bytes/)
  })

  it('a zero-length file alone (an existing file) is not taken for a new install either', async () => {
    fs.writeFileSync(dbFile(), '')
    const m = await licensing()
    expect(m.health().state).toBe('degraded')
    expect(fs.statSync(dbFile()).size).toBe(0)
    expect(fs.existsSync(`${dbFile()}-wal`)).toBe(false)
  })

  it('random bytes over pages 3-4 of a populated database: degraded with the quick_check message, file unchanged', async () => {
    populate()
    damagePages3And4(dbFile())
    const before = fs.readFileSync(dbFile())
    const m = await licensing()
    await m.start?.()
    const health = m.health()
    expect(health.state).toBe('degraded')
    expect(health.reason).toMatch(/licensing\.sqlite fails quick_check: .*page/i)
    expect(fs.readFileSync(dbFile()).equals(before)).toBe(true)
    // The read-only check's own -wal and -shm are not left beside it.
    expect(fs.existsSync(`${dbFile()}-wal`)).toBe(false)
    expect(fs.existsSync(`${dbFile()}-shm`)).toBe(false)
    // No backup is taken of a database that failed its check.
    expect(fs.existsSync(path.join(dataDir, 'backups'))).toBe(false)
  })

  it('a database without the licensing schema is refused and not migrated', async () => {
    const pre = new Database(dbFile())
    pre.exec('CREATE TABLE unrelated (x TEXT)')
    pre.close()
    const before = fs.readFileSync(dbFile())
    const m = await licensing()
    expect(m.health().reason).toMatch(/no schema_migrations table/)
    expect(fs.readFileSync(dbFile()).equals(before)).toBe(true)
  })

  it('a fresh data directory still creates the database and works as before', async () => {
    const m = await licensing()
    await m.start?.()
    expect(m.health()).toEqual({ state: 'ok', reason: null, remedy: null })
    expect(await listProducts(m)).toMatchObject({ total: 0 })
    expect(fs.statSync(dbFile()).size).toBeGreaterThan(0)
    expect(logs.lines.some((l) => l.includes('no licensing database yet'))).toBe(true)
  })

  it('an existing sound database passes its check, is migrated and opened as before', async () => {
    populate()
    const m = await licensing()
    expect(m.health().state).toBe('ok')
    expect(rowCount(dbFile(), 'licenses')).toBe(43)
    expect(logs.lines.some((l) => l.includes('passed its start check'))).toBe(true)
  })

  it('the check runs hourly on the timers it is given, and a failed round turns it off once', async () => {
    populate()
    const s = createLicensingServices(deps())
    const scheduled: { fn: () => void; ms: number }[] = []
    const damages: string[] = []
    const watch = new LicensingDbWatch({
      file: dbFile(),
      backups: new LicensingBackups({
        db: s.db,
        dir: path.join(dataDir, 'backups'),
        keep: 0,
        clock,
        logger: createLogger({ sink: logs }),
      }),
      newestBackup: () => null,
      clock,
      logger: createLogger({ sink: logs }),
      onDamage: (err) => damages.push(err.message),
      timers: { setInterval: (fn, ms) => scheduled.push({ fn, ms }), clearInterval: () => undefined },
    })
    try {
      await watch.start()
      expect(scheduled).toEqual([{ fn: expect.any(Function), ms: DB_CHECK_INTERVAL_MS }])
      expect(DB_CHECK_INTERVAL_MS).toBe(60 * 60_000)
      s.db.pragma('wal_checkpoint(TRUNCATE)')
      damagePages3And4(dbFile())
      scheduled[0]!.fn()
      await watch.stop()
      expect(damages).toEqual([expect.stringMatching(/licensing\.sqlite fails quick_check/)])
      expect(await watch.tick()).toEqual({ ok: false, backup: null })
      expect(damages).toHaveLength(1)
    } finally {
      s.close()
    }
  })

  it('the periodic check finds damage made after start: degraded, routes refuse, no more backups', async () => {
    populate()
    const m = await licensing()
    await m.start?.()
    expect(m.health().state).toBe('ok')
    expect(await m.dbWatch!.tick()).toMatchObject({ ok: true })
    m.database!().pragma('wal_checkpoint(TRUNCATE)')
    damagePages3And4(dbFile())
    const backupsBefore = fs.readdirSync(path.join(dataDir, 'backups'))
    clock.advance(2 * DAY)
    expect(await m.dbWatch!.tick()).toEqual({ ok: false, backup: null })
    const health = m.health()
    expect(health.state).toBe('degraded')
    expect(health.reason).toMatch(/fails quick_check/)
    expect(health.remedy).toMatch(/backups\/licensing-\d{8}T\d{6}\.\d{3}Z\.sqlite/)
    await expect(listProducts(m)).rejects.toThrow(/fails quick_check/)
    expect(fs.readdirSync(path.join(dataDir, 'backups'))).toEqual(backupsBefore)
    expect(logs.lines.some((l) => l.includes('failed its periodic check'))).toBe(true)
    // Stopping does not checkpoint into the damaged file: the file stays as found and its WAL stays beside it.
    const damaged = fs.readFileSync(dbFile())
    await modules.pop()!.stop?.()
    expect(fs.readFileSync(dbFile()).equals(damaged)).toBe(true)
    expect(fs.existsSync(`${dbFile()}-wal`)).toBe(true)
  })
})
