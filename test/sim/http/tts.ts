import type http from 'node:http'
import {
  makeWav,
  parseMultipart,
  sendJson,
  startFake,
  writeChunks,
  type FakeContext,
  type FakeOptions,
  type FakeServer,
} from './common'

/**
 * A fake tts service: `GET /v1/voices` (60+ voice ids `<family>.<LOCALE>.<Name>[.<Style>]`, as
 * on the real service), `GET /v1/models`, and `POST /v1/audio/synthesize` (multipart `text`,
 * `language`, `voice`, optional `speed`) answering raw WAV bytes.
 */
export interface FakeTtsOptions extends FakeOptions {
  sampleRate?: number
}

export interface FakeTts extends FakeServer {
  readonly voices: readonly string[]
}

const FAMILY = 'Multivoice'
const LOCALES: Record<string, string[]> = {
  'EN-US': ['Aria', 'Sofia', 'Mia', 'Jason', 'Leo', 'Ray', 'Diego', 'Grace', 'Pascal'],
  'EN-GB': ['Oliver', 'Amelia', 'Harry', 'Isla'],
  'ES-US': ['Isabela', 'Diego', 'Camila', 'Mateo'],
  'ES-ES': ['Lucia', 'Alvaro'],
  'FR-FR': ['Louise', 'Pascal', 'Chloe', 'Hugo'],
  'DE-DE': ['Jan', 'Lena', 'Felix', 'Mia'],
  'IT-IT': ['Giulia', 'Marco', 'Sofia'],
  'PT-BR': ['Camila', 'Rafael', 'Beatriz'],
  'JA-JP': ['Haruto', 'Yui', 'Sakura'],
  'ZH-CN': ['Wei', 'Mei', 'Jun', 'Xiu'],
  'HI-IN': ['Aarav', 'Diya'],
  'NL-NL': ['Daan', 'Emma'],
  'KO-KR': ['Minjun', 'Seoyeon'],
  'SV-SE': ['Astrid', 'Erik'],
  'PL-PL': ['Zofia', 'Jakub'],
  'TR-TR': ['Elif', 'Emre'],
}
const STYLES = ['Calm', 'Happy']

export function simVoices(): string[] {
  const out: string[] = []
  for (const [locale, names] of Object.entries(LOCALES)) {
    for (const n of names) out.push(`${FAMILY}.${locale}.${n}`)
    if (locale === 'EN-US')
      for (const n of names.slice(0, 5)) for (const s of STYLES) out.push(`${FAMILY}.${locale}.${n}.${s}`)
  }
  return out
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v
}

export async function startFakeTts(opts: FakeTtsOptions = {}): Promise<FakeTts> {
  const voices = simVoices()
  const known = new Set(voices)
  const rate = opts.sampleRate ?? 22050

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, ctx: FakeContext): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method === 'GET' && path === '/v1/voices') {
      req.resume()
      return sendJson(res, 200, {
        voices: voices.map((id) => {
          const locale = id.split('.')[1]!
          return { id, language: `${locale.slice(0, 2).toLowerCase()}-${locale.slice(3)}` }
        }),
      })
    }
    if (req.method === 'GET' && path === '/v1/models') {
      req.resume()
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: `sim/${FAMILY}-tts`, object: 'model', created: 1_767_225_600, owned_by: 'tts' }],
      })
    }
    if (req.method === 'GET' && path === '/health') {
      req.resume()
      return sendJson(res, 200, { status: 'ok' })
    }
    if (req.method !== 'POST' || path !== '/v1/audio/synthesize') {
      req.resume()
      return sendJson(res, 404, { detail: `no route ${req.method} ${path}` })
    }
    let form: Awaited<ReturnType<typeof parseMultipart>>
    try {
      form = await parseMultipart(req, res)
    } catch (err) {
      return sendJson(res, 400, { detail: `bad multipart body: ${(err as Error).message}` })
    }
    const text = first(form.fields.text)
    const voice = first(form.fields.voice)
    const language = first(form.fields.language)
    if (!text) return sendJson(res, 400, { detail: "field 'text' is required" })
    if (!voice || !known.has(voice)) return sendJson(res, 400, { detail: `unknown voice ${JSON.stringify(voice)}` })
    const locale = voice.split('.')[1]!
    const expected = `${locale.slice(0, 2).toLowerCase()}-${locale.slice(3)}`
    if (language !== expected)
      return sendJson(res, 400, {
        detail: `language ${JSON.stringify(language)} does not match voice ${voice} (${expected})`,
      })
    const speed = Number(first(form.fields.speed) ?? '1') || 1
    const wav = makeWav(Math.min(60, (0.06 * text.length) / speed + 0.2), rate)
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length })
    const chunks: Buffer[] = []
    for (let i = 0; i < wav.length; i += 16384) chunks.push(wav.subarray(i, i + 16384))
    if (await writeChunks(res, ctx, chunks)) res.end()
  }

  const fake = await startFake('tts', handle, opts)
  return Object.assign(fake, { voices })
}
