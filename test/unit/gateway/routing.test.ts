import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src-main/lib/clock'
import { Readable } from 'node:stream'
import type http from 'node:http'
import { openMultipart, scanForFilePart } from '../../../src-main/gateway/audio/multipart'
import { RequestLog } from '../../../src-main/gateway/relay/requestLog'
import { COLLECTION, embeddingsPath } from '../../../src-main/gateway/relay/search'
import { parseSpeech, voiceLanguage } from '../../../src-main/gateway/audio/speech'
import { configuredBase, serviceBase, urlHost } from '../../../src-main/cluster/serviceDirectory'
import { errorEventData } from '../../../src-main/gateway/relay/upstreamAnswers'
import { ApiError } from '../../../src-main/contract/errors'

describe('voice → language (spec 1, 4.9 rule 1)', () => {
  it('reads the middle locale segment', () => {
    expect(voiceLanguage('Multivoice.EN-US.Aria')).toBe('en-US')
    expect(voiceLanguage('Magpie-Multilingual.ES-US.Diego.Calm')).toBe('es-US')
    expect(voiceLanguage('x.fr_fr.Louise')).toBe('fr-FR')
    expect(voiceLanguage('x.ES-419.Ana')).toBe('es-419')
  })
  it('has no language for ids without a locale segment', () => {
    for (const v of [
      'alloy',
      'EN-US',
      'Multivoice.Aria',
      'Multivoice.english.Aria',
      'a..b',
      'a.EN-US.b.c.d.e',
      'a.EN-US.b;rm',
    ])
      expect(voiceLanguage(v), v).toBeNull()
  })
  it('refuses other formats than wav and pcm (voices are resolved later: see speech.test.ts)', () => {
    expect(() => parseSpeech({ voice: 'a.EN-US.b', input: 'hi', response_format: 'mp3' })).toThrow(/"wav".*"pcm"/)
    expect(() => parseSpeech({ voice: 'a.EN-US.b', input: '' })).toThrow(ApiError)
    expect(parseSpeech({ voice: 'a.DE-DE.b', input: 'hallo', speed: 1.5 })).toMatchObject({ speed: 1.5 })
  })
})

describe('collection names', () => {
  it('allow only letters, digits, _ and - up to 64', () => {
    for (const ok of ['docs', 'Docs_v2-final', 'a', 'x'.repeat(64)]) expect(COLLECTION.test(ok), ok).toBe(true)
    for (const bad of ['', 'a/b', '..', 'a.b', 'a?b', 'a%2fb', 'a b', 'a;b', '$(x)', 'x'.repeat(65), 'é', 'a\nb'])
      expect(COLLECTION.test(bad), bad).toBe(false)
  })
  it('post embeddings under /v1 unless the base already ends in it', () => {
    expect(embeddingsPath('http://h:1')).toBe('/v1/embeddings')
    expect(embeddingsPath('http://h:1/v1')).toBe('/embeddings')
  })
})

describe('upstream addresses', () => {
  it('validates hosts before building URLs', () => {
    expect(serviceBase('127.0.0.1', 8888)).toBe('http://127.0.0.1:8888')
    expect(serviceBase('spark-1.lan', 9000)).toBe('http://spark-1.lan:9000')
    expect(serviceBase('fe80::1', 9000)).toBe('http://[fe80::1]:9000')
    for (const bad of ['', 'a b', 'host/path', 'user@host', 'h:80', '-bad', 'a..b'])
      expect(serviceBase(bad, 1), bad).toBeNull()
    expect(serviceBase('h', 0)).toBeNull()
    expect(urlHost('x_y')).toBeNull()
  })
  it('re-validates configured base URLs', () => {
    expect(configuredBase('http://127.0.0.1:6333/')).toBe('http://127.0.0.1:6333')
    expect(configuredBase('http://emb.lan:8080/v1')).toBe('http://emb.lan:8080/v1')
    expect(configuredBase('ftp://x')).toBeNull()
    expect(configuredBase('http://u:p@x')).toBeNull()
    expect(configuredBase('http://x/?q=1')).toBeNull()
    expect(configuredBase(null)).toBeNull()
  })
})

describe('multipart scanning', () => {
  /** A request made of `body` cut into chunks of `size` bytes. */
  const request = (body: string, size = 7, boundary = 'B'): http.IncomingMessage => {
    const buf = Buffer.from(body)
    const chunks: Buffer[] = []
    for (let i = 0; i < buf.length; i += size) chunks.push(buf.subarray(i, i + size))
    const r = Readable.from(chunks) as unknown as http.IncomingMessage
    r.headers = { 'content-type': `multipart/form-data; boundary=${boundary}` }
    return r
  }

  it('refuses a body that is not multipart, or has no boundary; reads one with a quoted boundary', async () => {
    expect(() => openMultipart({ 'content-type': 'application/json' }, {})).toThrow(/multipart/)
    expect(() => openMultipart({ 'content-type': 'multipart/form-data' }, {})).toThrow(/[Bb]oundary/)
    const parser = openMultipart({ 'content-type': 'multipart/form-data; boundary="q u"' }, {})
    const fields: [string, string][] = []
    parser.on('field', (name: string, value: string) => fields.push([name, value]))
    const done = new Promise<void>((resolve) => parser.on('close', () => resolve()))
    parser.end('--q u\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n--q u--\r\n')
    await done
    expect(fields).toEqual([['model', 'asr']])
  })
  it('finds the file part across chunk boundaries, after text fields, and keeps every chunk read', async () => {
    const body =
      '--B\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n' +
      '--B\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....'
    const chunks = await scanForFilePart(request(body))
    const read = Buffer.concat(chunks).toString()
    expect(body.startsWith(read)).toBe(true)
    expect(read).toContain('filename="a.wav"')
  })
  it('does not take a text field named file, nor another file part', async () => {
    const body =
      '--B\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n' +
      '--B\r\nContent-Disposition: form-data; name="profile"; filename="x"\r\n\r\ny\r\n--B--\r\n'
    await expect(scanForFilePart(request(body))).rejects.toThrow(/'file' is required \(got: file, profile\)/)
  })
  it('gives up when no file part appears within the scan limit', async () => {
    const body = `--B\r\nContent-Disposition: form-data; name="notes"\r\n\r\n${'a'.repeat(300)}`
    await expect(scanForFilePart(request(body, 50), { maxScan: 100 })).rejects.toThrow(/within the first 100 bytes/)
  })
})

describe('request log', () => {
  it('keeps the last N newest first and buckets latencies', () => {
    const log = new RequestLog(new ManualClock(), 3)
    for (const ms of [0.5, 3, 150, 70_000])
      log.add({
        method: 'POST',
        path: '/v1/x',
        status: 200,
        latency_ms: ms,
        ttfb_ms: null,
        bytes: 1,
        streamed: false,
        aborted: false,
      })
    expect(log.list(10).map((e) => e.latency_ms)).toEqual([70_000, 150, 3])
    expect(log.list(10, 3).map((e) => e.seq)).toEqual([4])
    const h = log.histogram()
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(3)
    expect(h.counts[h.bounds_ms.indexOf(5)]).toBe(1)
    expect(h.counts[h.bounds_ms.indexOf(200)]).toBe(1)
    expect(h.counts.at(-1)).toBe(1)
    expect(log.totalCount).toBe(4)
  })
})

describe('stream error event', () => {
  it('passes an OpenAI-shaped upstream error through and wraps anything else', () => {
    expect(JSON.parse(errorEventData(500, '{"error":{"message":"boom","code":500}}', 'llm'))).toEqual({
      error: { message: 'boom', code: 500 },
    })
    expect(JSON.parse(errorEventData(503, 'Service Unavailable', 'llm')).error.message).toBe(
      'llm answered HTTP 503: Service Unavailable',
    )
  })
})
