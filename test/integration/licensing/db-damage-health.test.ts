import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import type { LicensingModule } from '../../../src-main/licensing/module'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

const PAGE = 4096
type Health = {
  ok: boolean
  components: { licensing: { state: string; reason: string | null; remedy: string | null } }
}

/** Fixed "random" bytes (an LCG), the same every run. */
function noise(n: number): Buffer {
  const b = Buffer.alloc(n)
  let x = 0x9e3779b9
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    b[i] = x >>> 24
  }
  return b
}

describe('/api/health and the licensing routes follow the licensing database', () => {
  const daemons: TestDaemon[] = []
  const dirs: string[] = []
  const clock = new ManualClock(Date.UTC(2026, 10, 27, 22))
  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop()
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
  })
  async function daemon(dataDir: string): Promise<TestDaemon> {
    const d = await startDaemon({ dataDir, clock, env: { LICENSING_RATE_LIMIT: '0' } })
    daemons.push(d)
    return d
  }
  const tempDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-lic-health-'))
    dirs.push(dir)
    return dir
  }
  const health = async (d: TestDaemon): Promise<Health> =>
    (await fetch(`${d.url}/api/health`)).json() as Promise<Health>
  const licensingOf = (d: TestDaemon): LicensingModule =>
    d.core.modules.find((m) => m.name === 'licensing') as LicensingModule
  async function shop(d: TestDaemon): Promise<void> {
    for (const slug of ['notes', 'maps', 'sums']) {
      const res = await d.admin('/v1/admin/products', {
        method: 'POST',
        body: JSON.stringify({ slug, name: slug, price_value: 100 }),
      })
      expect(res.status).toBe(200)
      const { id } = (await res.json()) as { id: string }
      for (let i = 0; i < 3; i++)
        expect(
          (await d.admin('/v1/admin/licenses', { method: 'POST', body: JSON.stringify({ product_id: id }) })).status,
        ).toBe(200)
    }
  }

  it('a zero-length licensing.sqlite with its WAL beside it: degraded in /api/health, 503, both files unchanged', async () => {
    const dataDir = tempDir()
    const first = await daemon(dataDir)
    await shop(first)
    const file = path.join(dataDir, 'licensing.sqlite')
    // A crash snapshot: the WAL still holds the shop, and then the database file is emptied.
    const wal = fs.readFileSync(`${file}-wal`)
    await daemons.pop()!.stop()
    fs.writeFileSync(file, '')
    fs.writeFileSync(`${file}-wal`, wal)

    const d = await daemon(dataDir)
    const body = await health(d)
    expect(body.ok).toBe(true)
    expect(body.components.licensing.state).toBe('degraded')
    expect(body.components.licensing.reason).toMatch(/licensing\.sqlite is empty \(0 bytes\)/)
    expect(body.components.licensing.remedy).toMatch(/backups\/licensing-.*\.sqlite over licensing\.sqlite/)
    expect(JSON.stringify(body)).not.toContain(dataDir)
    expect((await d.admin('/v1/admin/products')).status).toBe(503)
    expect((await fetch(`${d.url}/v1/pubkey`)).status).toBe(503)
    expect(fs.statSync(file).size).toBe(0)
    expect(fs.readFileSync(`${file}-wal`).equals(wal)).toBe(true)
  })

  it('damage made while running is found by the periodic check and shown by /api/health', async () => {
    const dataDir = tempDir()
    const d = await daemon(dataDir)
    await shop(d)
    expect((await health(d)).components.licensing.state).toBe('ok')
    const backups = fs.readdirSync(path.join(dataDir, 'backups'))
    expect(backups).toHaveLength(1)

    const lic = licensingOf(d)
    lic.database!().pragma('wal_checkpoint(TRUNCATE)')
    const fd = fs.openSync(path.join(dataDir, 'licensing.sqlite'), 'r+')
    fs.writeSync(fd, noise(2 * PAGE), 0, 2 * PAGE, 2 * PAGE)
    fs.closeSync(fd)
    expect((await health(d)).components.licensing.state).toBe('ok') // not found until the check runs

    clock.advance(60 * 60_000)
    expect((await lic.dbWatch!.tick()).ok).toBe(false)
    const body = await health(d)
    expect(body.components.licensing.state).toBe('degraded')
    expect(body.components.licensing.reason).toMatch(/licensing\.sqlite fails quick_check/)
    expect(body.components.licensing.remedy).toContain(`backups/${backups[0]}`)
    const res = await d.admin('/v1/admin/products')
    expect(res.status).toBe(503)
    expect(((await res.json()) as { detail: string }).detail).toMatch(/fails quick_check/)
    expect((await fetch(`${d.url}/buy/notes`)).status).toBe(503)
    expect(fs.readdirSync(path.join(dataDir, 'backups'))).toEqual(backups)
  })
})
