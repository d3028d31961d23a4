import type http from 'node:http'
import { z } from 'zod'
import { ApiError } from '../contract/errors'
import { encodeMultipart } from './multipart'
import type { Upstream } from './upstreams'
import { callUpstream, readText, upstreamDetail, UpstreamUnreachable } from './wire'

/** Voice ids are dot-separated with a middle locale segment: `<family>.<LOCALE>.<Name>[.<Style>]` (spec 1, 4.9 rule 1). */
export const VOICE_FORM = '<family>.<LOCALE>.<Name>, e.g. Multivoice.EN-US.Aria'

const VOICE_ID = /^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){2,3}$/

/** `Multivoice.EN-US.Aria` → `en-US`; null when the id has no locale segment. */
export function voiceLanguage(voice: string): string | null {
  if (!VOICE_ID.test(voice)) return null
  const loc = voice.split('.')[1]!
  const m = /^([A-Za-z]{2,3})[-_]([A-Za-z]{2}|\d{3})$/.exec(loc)
  if (!m) return null
  return `${m[1]!.toLowerCase()}-${m[2]!.toUpperCase()}`
}

/** The public speech body (OpenAI `audio.speech`); unknown fields are ignored as OpenAI does. */
export const SpeechRequest = z.object({
  model: z.string().max(200).optional(),
  input: z.string().min(1, 'input must not be empty').max(20_000),
  voice: z.string().min(1).max(200),
  response_format: z.enum(['wav']).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  instructions: z.string().max(4000).optional(),
})
export type SpeechRequest = z.infer<typeof SpeechRequest>

export function parseSpeech(body: Record<string, unknown>): SpeechRequest & { language: string } {
  if (typeof body.response_format === 'string' && body.response_format !== 'wav')
    throw new ApiError(
      'bad_input',
      `response_format ${JSON.stringify(body.response_format)} is not supported: the tts service returns wav`,
    )
  const parsed = SpeechRequest.safeParse(body)
  if (!parsed.success)
    throw new ApiError(
      'bad_input',
      parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    )
  const language = voiceLanguage(parsed.data.voice)
  if (language === null)
    throw new ApiError(
      'bad_input',
      `voice ${JSON.stringify(parsed.data.voice)} has no locale segment; expected ${VOICE_FORM}`,
    )
  return { ...parsed.data, language }
}

/** Calls the tts service's multipart synthesize; resolves with the WAV response stream. */
export async function synthesize(
  tts: Upstream,
  speech: { input: string; voice: string; language: string; speed?: number },
  signal: AbortSignal,
  onWedged: (detail: string) => void,
): Promise<http.IncomingMessage> {
  const fields: [string, string][] = [
    ['text', speech.input],
    ['language', speech.language],
    ['voice', speech.voice],
  ]
  if (speech.speed !== undefined) fields.push(['speed', String(speech.speed)])
  const form = encodeMultipart(fields)
  let res: http.IncomingMessage
  try {
    res = await callUpstream(tts, {
      method: 'POST',
      path: '/v1/audio/synthesize',
      headers: { 'content-type': form.contentType, 'content-length': form.length, accept: 'audio/wav' },
      body: form.body,
      signal,
    })
  } catch (err) {
    if (err instanceof UpstreamUnreachable) throw new ApiError('upstream_unreachable', err.message)
    throw err
  }
  const status = res.statusCode ?? 502
  if (status === 200) return res
  const detail = upstreamDetail(await readText(res).catch(() => ''))
  if (status >= 500) {
    onWedged(`tts answered HTTP ${status}: ${detail}`)
    throw new ApiError(
      'unavailable',
      `tts failed (HTTP ${status}: ${detail}); a health probe was started, retry in 60 s`,
      {
        headers: { 'Retry-After': '60' },
      },
    )
  }
  throw new ApiError(status === 404 ? 'not_found' : 'bad_input', `tts refused the request: ${detail}`, {
    status: status === 404 ? 404 : 400,
  })
}
