import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { ManualClock } from '../../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { createLicensingModule, type LicensingModule } from '../../../src-main/licensing/module'
import { createLicensingServices } from '../../../src-main/licensing/licensingServices'
import { testCoreDeps } from '../../helpers/coreDeps'
import { seedLicensing } from '../../helpers/licensingSeed'
import { rowCount } from '../../helpers/sqliteRows'

const DAY = 86_400_000
const NAME = /^licensing-\d{8}T\d{6}\.\d{3}Z\.sqlite$/

describe('rolling backups of the licensing database', () => {
  let dataDir: string
  let clock: ManualClock
  let logs: MemorySink
  const modules: LicensingModule[] = []

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-lic-backup-'))
    clock = new ManualClock(Date.UTC(2026, 10, 27, 21, 0, 0, 5))
    logs = new MemorySink()
  })
  afterEach(async () => {
    for (const m of modules.splice(0)) await m.stop?.()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const dbFile = (): string => path.join(dataDir, 'licensing.sqlite')
  const backupDir = (): string => path.join(dataDir, 'backups')
  const backups = (): string[] => (fs.existsSync(backupDir()) ? fs.readdirSync(backupDir()).sort() : [])
  const deps = (env: Record<string, string> = {}) =>
    testCoreDeps({
      config: loadConfig({ env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', ...env } }),
      clock,
      logger: createLogger({ redactor: new Redactor(), sink: logs, level: 'debug', now: () => clock.now() }),
    })
  async function licensing(env: Record<string, string> = {}): Promise<LicensingModule> {
    const m = await createLicensingModule(deps(env))
    modules.push(m)
    return m
  }
  function populate(licenses: number): void {
    const s = createLicensingServices(deps())
    seedLicensing(s, { licenses })
    s.close()
  }

  it('takes one at start and one a day, rotated to LICENSING_BACKUPS, private, with sortable UTC names', async () => {
    populate(12)
    const m = await licensing({ LICENSING_BACKUPS: '3' })
    await m.start?.()
    expect(backups()).toEqual(['licensing-20261127T210000.005Z.sqlite'])
    // Within the day: checks only.
    clock.advance(60 * 60_000)
    expect(await m.dbWatch!.tick()).toEqual({ ok: true, backup: null })
    for (let day = 1; day <= 4; day++) {
      clock.advance(DAY)
      expect(path.basename((await m.dbWatch!.tick()).backup ?? '')).toMatch(NAME)
    }
    const names = backups()
    expect(names).toHaveLength(3)
    for (const n of names) expect(n).toMatch(NAME)
    // The newest three are kept, oldest removed.
    expect(names[0]).toBe('licensing-20261129T220000.005Z.sqlite')
    expect(names[2]).toBe('licensing-20261201T220000.005Z.sqlite')
    expect(fs.statSync(backupDir()).mode & 0o777).toBe(0o700)
    for (const n of names) expect(fs.statSync(path.join(backupDir(), n)).mode & 0o777).toBe(0o600)
    // No temp files or SQLite side files are left in the folder.
    expect(fs.readdirSync(backupDir()).every((n) => NAME.test(n))).toBe(true)
    expect(logs.lines.filter((l) => l.includes('licensing backup written'))).toHaveLength(5)
  })

  it('a backup holds the rows, and restoring it (stop, copy over, remove -wal/-shm, start) brings them back', async () => {
    populate(9)
    const m = await licensing()
    await m.start?.()
    const [name] = backups()
    expect(name).toMatch(NAME)
    const backup = path.join(backupDir(), name!)
    expect(rowCount(backup, 'licenses')).toBe(9)
    expect(rowCount(backup, 'products')).toBe(1)
    await modules.pop()!.stop?.()

    // The database is lost; the operator restores the backup as the README says.
    fs.writeFileSync(dbFile(), 'lost')
    fs.copyFileSync(backup, dbFile())
    fs.rmSync(`${dbFile()}-wal`, { force: true })
    fs.rmSync(`${dbFile()}-shm`, { force: true })
    const restored = await licensing()
    expect(restored.health().state).toBe('ok')
    expect(rowCount(dbFile(), 'licenses')).toBe(9)
  })

  it('LICENSING_BACKUPS=0 takes none and removes none', async () => {
    populate(3)
    const m = await licensing({ LICENSING_BACKUPS: '0' })
    await m.start?.()
    clock.advance(2 * DAY)
    expect(await m.dbWatch!.tick()).toEqual({ ok: true, backup: null })
    expect(backups()).toEqual([])
    expect(logs.lines.some((l) => l.includes('licensing backups are off'))).toBe(true)
  })

  it('a damaged start names the newest backup in its remedy and takes no backup', async () => {
    populate(3)
    const first = await licensing({ LICENSING_BACKUPS: '2' })
    await first.start?.()
    clock.advance(DAY)
    await first.dbWatch!.tick()
    await modules.pop()!.stop?.()
    const names = backups()
    expect(names).toHaveLength(2)
    fs.writeFileSync(dbFile(), '')
    const m = await licensing({ LICENSING_BACKUPS: '2' })
    await m.start?.()
    expect(m.health().state).toBe('degraded')
    expect(m.health().remedy).toContain(`backups/${names[1]}`)
    expect(m.health().remedy).toMatch(/remove licensing\.sqlite-wal and licensing\.sqlite-shm/)
    expect(backups()).toEqual(names)
  })

  it('the setting is validated: out of range falls back to 7 with a warning', () => {
    const c = loadConfig({ env: { DATA_DIR: dataDir, LICENSING_BACKUPS: '-1' } })
    expect(c.licensingBackups).toBe(7)
    expect(c.warnings.some((w) => w.startsWith('LICENSING_BACKUPS'))).toBe(true)
    expect(loadConfig({ env: { DATA_DIR: dataDir, LICENSING_BACKUPS: '30' } }).licensingBackups).toBe(30)
    expect(c.paths.licensingBackupDir).toBe(path.join(dataDir, 'backups'))
  })
})
