import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'

/** `POST /api/health-event` through the real HTTP route: the subject is any string (spec 1, 2.7), bounded. */
describe('POST /api/health-event subjects', () => {
  let daemon: TestDaemon

  beforeAll(async () => {
    // No nodes and no background loops: the route alone is under test.
    daemon = await startDaemon({ env: { MONITOR_INTERVAL_S: '0' }, start: false })
  })
  afterAll(async () => {
    await daemon?.stop()
  })

  const post = (service: string) =>
    fetch(`${daemon.url}/api/health-event`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ service, ok: false, source: 'notes-app', error: 'HTTP 502', ms: 40 }),
    })
  const lastEvent = async () => {
    const body = (await (await daemon.admin('/api/connectivity')).json()) as { events: { subject: string }[] }
    return body.events.at(-1)
  }

  it('accepts a subject with spaces and records it as sent', async () => {
    for (const service of ['Notes app transcription', 'Übersetzer – tts', 'x'.repeat(200)]) {
      const res = await post(service)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { event: { subject: string } }).event.subject).toBe(service)
      expect(await lastEvent()).toMatchObject({ kind: 'report', subject: service, ok: false, source: 'notes-app' })
    }
  })

  it('trims surrounding whitespace, line ends included', async () => {
    expect((await post('  my service  ')).status).toBe(200)
    expect((await lastEvent())?.subject).toBe('my service')
    expect((await post('\tasr\r\n')).status).toBe(200)
    expect((await lastEvent())?.subject).toBe('asr')
  })

  it('refuses empty, over-long and control-character subjects with 400, recording nothing', async () => {
    const before = await lastEvent()
    const bad = [
      '',
      '   ',
      'x'.repeat(201),
      'asr\n2026-01-01T00:00:00.000Z INFO forged log line',
      'tab\there',
      'nul\u0000',
      'esc\u001b[31mred',
      'del\u007f',
      'c1\u0085',
      'line\u2028sep',
      'bidi\u202eevil',
    ]
    for (const service of bad) {
      const res = await post(service)
      expect(res.status, JSON.stringify(service)).toBe(400)
    }
    expect(await lastEvent()).toEqual(before)
  })
})
