import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { gatewayOptions } from '../../../src-main/gateway/module'
import { silenceWav, startRig, type GatewayRig } from './setup'

const MiB = 1024 * 1024

describe('gateway limits from Settings', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-limits-'))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('maps the upload, spool, disk-floor and timeout settings to the gateway’s options', () => {
    const config = loadConfig({
      env: {
        DATA_DIR: dir,
        GATEWAY_UPLOAD_MAX_MB: '100',
        GATEWAY_UPLOAD_IDLE_S: '15',
        GATEWAY_BODY_IDLE_S: '7',
        GATEWAY_SPOOL_MB: '2048',
        GATEWAY_DISK_FLOOR_MB: '0',
        GATEWAY_TIMEOUT_MIN: '90',
        GATEWAY_BODY_BUDGET_MB: '64',
      },
    })
    expect(config.warnings).toEqual([])
    expect(gatewayOptions(config)).toMatchObject({
      uploadMaxBytes: 100 * MiB,
      uploadIdleMs: 15_000,
      bodyIdleMs: 7000,
      spoolBudgetBytes: 2048 * MiB,
      diskFloorBytes: 0,
      proxyTimeoutMs: 90 * 60_000,
      bodyBudgetBytes: 64 * MiB,
    })
    // The defaults are the documented ones; an option given in code (tests) wins over the setting.
    const defaults = gatewayOptions(loadConfig({ env: { DATA_DIR: dir } }), { uploadIdleMs: 5 })
    expect(defaults).toMatchObject({
      uploadMaxBytes: 4096 * MiB,
      uploadIdleMs: 5,
      bodyIdleMs: 10_000,
      spoolBudgetBytes: 8192 * MiB,
      diskFloorBytes: 1024 * MiB,
      proxyTimeoutMs: 30 * 60_000,
      // 256 MiB, or an eighth of the machine's memory when that is less.
      bodyBudgetBytes: Math.min(256, Math.max(16, Math.floor(os.totalmem() / (8 * MiB)))) * MiB,
    })
  })

  it('refuses a value out of range with a message that names the range, and keeps the default', () => {
    const config = loadConfig({ env: { DATA_DIR: dir, GATEWAY_UPLOAD_MAX_MB: '0', GATEWAY_TIMEOUT_MIN: 'soon' } })
    expect(config.warnings.join('\n')).toMatch(/GATEWAY_UPLOAD_MAX_MB.*between 1 and/)
    expect(config.warnings.join('\n')).toMatch(/GATEWAY_TIMEOUT_MIN/)
    expect(gatewayOptions(config)).toMatchObject({ uploadMaxBytes: 4096 * MiB, proxyTimeoutMs: 30 * 60_000 })
  })

  describe('on the running daemon', () => {
    let rig: GatewayRig
    afterAll(async () => rig?.stop())

    it('refuses an upload over GATEWAY_UPLOAD_MAX_MB with 413 and takes one under it', async () => {
      rig = await startRig({ GATEWAY_UPLOAD_MAX_MB: '1' })
      const post = (seconds: number): Promise<Response> => {
        const fd = new FormData()
        fd.append('model', 'whisper')
        fd.append('file', new Blob([new Uint8Array(silenceWav(seconds))]), 'a.wav')
        return fetch(rig.daemon.url + '/v1/audio/transcriptions', { method: 'POST', body: fd })
      }
      // 16 kHz 16-bit mono: 32 KB a second, so 40 s is about 1.25 MiB and 10 s about 0.3 MiB.
      const over = await post(40)
      expect(over.status).toBe(413)
      expect(((await over.json()) as { error: { message: string } }).error.message).toMatch(/1048576|1 MiB/)
      expect((await post(10)).status).toBe(200)
    })
  })
})
