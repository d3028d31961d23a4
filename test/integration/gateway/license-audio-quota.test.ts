import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AccessLicenseRow } from '../../../src-main/contract/licensing'
import { ManualClock } from '../../../src-main/lib/clock'
import { parseWavHead } from '../../../src-main/gateway/audio/wavChunks'
import { accessTier, adminPost, chatAs, issueAccess, recoverPage } from './accessRig'
import { silenceWav, startRig, type GatewayRig } from './setup'

/** A license's audio minutes per period (issue 45): speech and transcription spend them, not tokens. */
const clock = new ManualClock(Date.UTC(2026, 0, 10, 12))
let rig: GatewayRig

beforeAll(async () => {
  rig = await startRig({}, { clock })
})
afterAll(async () => {
  await rig.stop()
})

interface Usage {
  resets_at: string
  tokens: { allowed: number | null; used: number; remaining: number | null }
  audio_seconds: { allowed: number | null; used: number; remaining: number | null }
  models: { model: string; requests: number; audio_seconds: number }[]
}

async function usage(secret: string): Promise<Usage> {
  const res = await fetch(`${rig.daemon.url}/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as Usage
}

/** The key's usage once `done` holds of it: a request's usage lands a moment after its answer (bounded). */
async function usageOnce(secret: string, done: (u: Usage) => boolean): Promise<Usage> {
  for (let i = 0; i < 200; i++) {
    const u = await usage(secret)
    if (done(u)) return u
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('the usage never landed')
}

/** A relayed transcription (`json`: the asr's answer carries no duration) of `seconds` of WAV. */
function transcribe(secret: string, seconds: number): Promise<Response> {
  const fd = new FormData()
  fd.append('file', new Blob([new Uint8Array(silenceWav(seconds))]), 'a.wav')
  fd.append('model', 'asr')
  fd.append('response_format', 'json')
  return fetch(`${rig.daemon.url}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}` },
    body: fd,
  })
}

function speak(secret: string, format: 'wav' | 'pcm' = 'wav'): Promise<Response> {
  return fetch(`${rig.daemon.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts', voice: 'alloy', input: 'Hello there, how are you?', response_format: format }),
  })
}

async function expectOutOfAudio(res: Response): Promise<void> {
  expect(res.status).toBe(429)
  expect(res.headers.get('x-should-retry')).toBe('false')
  const body = (await res.json()) as { error: { code: string; message: string } }
  expect(body.error.code).toBe('insufficient_quota')
  expect(body.error.message).toMatch(/has used its 1 audio minute for this period \(80 s counted\)/)
  expect(body.error.message).toContain('resets at 2026-02-10T12:00:00.000Z')
}

describe("a license's audio minutes", () => {
  it('a transcription admitted under the quota finishes and its overage counts; the next is refused 429 while chat still works', async () => {
    const lic = await issueAccess(
      rig,
      await accessTier(rig, 'audio-a', { tokens_per_period: 1_000_000, audio_minutes_per_period: 1 }),
    )
    const first = await transcribe(lic.secret, 40)
    expect(first.status).toBe(200)
    await first.arrayBuffer()
    await usageOnce(lic.secret, (u) => u.audio_seconds.used > 0)
    // 40 of 60 seconds used: admitted, and it runs to 80.
    const second = await transcribe(lic.secret, 40)
    expect(second.status).toBe(200)
    expect(((await second.json()) as { text: string }).text.length).toBeGreaterThan(0)
    const u = await usageOnce(lic.secret, (x) => x.audio_seconds.used >= 80)
    expect(u.audio_seconds).toEqual({ allowed: 60, used: 80, remaining: 0 })
    expect(u.models.find((m) => m.audio_seconds > 0)).toMatchObject({ requests: 2, audio_seconds: 80 })

    await expectOutOfAudio(await transcribe(lic.secret, 1))
    await expectOutOfAudio(await speak(lic.secret))
    const chat = await chatAs(rig, lic.secret)
    expect(chat.status).toBe(200)
    await chat.arrayBuffer()

    const v = (await (
      await fetch(`${rig.daemon.url}/v1/validate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: lic.licenseKey }),
      })
    ).json()) as { access?: Record<string, unknown> }
    expect(v.access).toMatchObject({ audio_minutes_per_period: 1, audio_seconds_used: 80, audio_seconds_remaining: 0 })

    const page = await recoverPage(rig, lic.licenseKey)
    expect(/<dd id="access-audio">\s*([^<]*?)\s*<\/dd>/.exec(page)?.[1]).toBe('1.3 of 1 used, 0 left')

    // The operator's view and /metrics: used against sold, by product and tier.
    const view = (await (await rig.daemon.admin('/v1/admin/access')).json()) as { licenses: AccessLicenseRow[] }
    expect(view.licenses.find((l) => l.license_id === lic.id)).toMatchObject({
      audio_seconds_allowed: 60,
      audio_seconds_used: 80,
    })
    const families = parsePrometheusTextFormat(await (await rig.daemon.admin('/metrics')).text())
    const sample = (name: string) =>
      families.find((f) => f.name === name)?.metrics.find((m) => m.labels?.product === 'audio-a')?.value
    expect(sample('tandem_access_audio_seconds_sold')).toBe('60')
    expect(sample('tandem_access_audio_seconds_used')).toBe('80')
  })

  it('spent tokens refuse chat but leave transcription to the audio minutes', async () => {
    const lic = await issueAccess(
      rig,
      await accessTier(rig, 'audio-b', { tokens_per_period: 5, audio_minutes_per_period: 10 }),
    )
    const chat = await chatAs(rig, lic.secret)
    expect(chat.status).toBe(200)
    await chat.arrayBuffer()
    await usageOnce(lic.secret, (u) => u.tokens.used >= 5)
    const refused = await chatAs(rig, lic.secret)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/5 tokens/)
    const heard = await transcribe(lic.secret, 2)
    expect(heard.status).toBe(200)
    await heard.arrayBuffer()
    expect((await usageOnce(lic.secret, (u) => u.audio_seconds.used > 0)).audio_seconds).toEqual({
      allowed: 600,
      used: 2,
      remaining: 598,
    })
  })

  it('speech counts the seconds of audio the tts answered, as WAV or as raw samples', async () => {
    const lic = await issueAccess(rig, await accessTier(rig, 'audio-c', { audio_minutes_per_period: 5 }))
    const wav = await speak(lic.secret)
    expect(wav.status).toBe(200)
    const bytes = Buffer.from(await wav.arrayBuffer())
    const heard = parseWavHead(bytes, bytes.length)!.seconds
    expect(heard).toBeGreaterThan(0.5)
    const afterWav = await usageOnce(lic.secret, (u) => u.audio_seconds.used > 0)
    expect(afterWav.audio_seconds.used).toBeCloseTo(heard, 6)
    expect(afterWav.tokens.allowed).toBeNull()

    const pcm = await speak(lic.secret, 'pcm')
    expect(pcm.status).toBe(200)
    const samples = (await pcm.arrayBuffer()).byteLength
    const rate = Number(pcm.headers.get('x-sample-rate')) * Number(pcm.headers.get('x-channels')) * 2
    const u = await usageOnce(lic.secret, (x) => x.audio_seconds.used > afterWav.audio_seconds.used)
    expect(u.audio_seconds.used).toBeCloseTo(heard + samples / rate, 6)
    expect(u.audio_seconds.remaining).toBeCloseTo(300 - u.audio_seconds.used, 6)
  })

  it('refuses 0, fractional and negative audio minutes with a 400 naming the field', async () => {
    const p = (await (
      await adminPost(rig, '/v1/admin/products', { slug: 'audio-bad', name: 'Bad', price_value: 1 })
    ).json()) as {
      id: string
    }
    for (const minutes of [0, 1.5, -3]) {
      const res = await adminPost(rig, `/v1/admin/products/${p.id}/policies`, {
        slug: `t${String(minutes).replace(/\W/g, '')}`,
        name: 'T',
        access: { audio_minutes_per_period: minutes },
      })
      expect(res.status, String(minutes)).toBe(400)
      expect(JSON.stringify(await res.json())).toContain('audio_minutes_per_period')
    }
  })
})
