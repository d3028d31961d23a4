import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Router } from 'express'
import { SPEECH_BODY_LIMIT } from '../../contract/relays'
import type { Logger } from '../../lib/logger'
import type { ProbeStart } from '../../services/types'
import { ClientGone, readBody } from '../../http/body'
import { requestState } from '../../http/requestState'
import { sendJson } from '../../http/respond'
import { checkKeyService, keyRestricted } from '../keys/consumerKeyStore'
import type { ModelLists } from '../relay/modelLists'
import type { RawRoute } from '../relay/rawRoute'
import { answerSpeech, parseSpeech, synthesize, type VoiceAliases } from './speech'
import { spoolHolder, type UploadSpool } from './spool'
import { relaySpooled, relayUpload, transcribeWithSpeakers } from './transcribe'
import { receiveForm, tooLarge, type FormFieldLimits, type ReceivedForm, type UploadLimits } from './uploads'
import { readDiarizedAsk, REFERENCE_MAX_CHARS } from './diarizedAsk'
import { answerDiarized } from './diarizedAnswer'
import type { Upstream, UpstreamName } from '../relay/upstreams'
import { usageMeterOf } from '../relay/usageMeter'
import { parseJsonObject } from '../relay/wire'

export interface AudioRouteDeps {
  readonly route: RawRoute
  readonly need: (name: UpstreamName) => Upstream
  readonly lists: ModelLists
  readonly voices: VoiceAliases
  readonly spool: UploadSpool
  readonly uploads: UploadLimits
  /** How long the asr may take over a relayed upload. */
  readonly proxyTimeoutMs: number
  readonly logger: Logger
  /** Asks deep health to probe a service that just failed (spec 1, 7). */
  probe(service: 'asr' | 'tts'): (reason: string) => ProbeStart
}

/** Speech, relayed transcription and diarization, and the diarized transcript of an upload. */
export function mountAudioRoutes(router: Router, d: AudioRouteDeps): void {
  router.post(
    '/v1/audio/speech',
    d.route('/v1/audio/speech', async (req, res) => {
      const body = parseJsonObject(await readBody(req, SPEECH_BODY_LIMIT))
      const asked = parseSpeech(body)
      const sp = await d.voices.resolve(asked)
      // The tts's models are its voices (as /v1/models lists them): the voice, or the name it was asked by.
      checkKeyService(requestState(res).consumer, [sp.voice, asked.voice], 'voice')
      usageMeterOf(res)?.addSpeechCharacters(sp.input.length)
      usageMeterOf(res)?.nameModel(sp.voice)
      const ac = new AbortController()
      res.once('close', () => ac.abort(new ClientGone()))
      const wav = await synthesize(d.need('tts'), sp, ac.signal, d.probe('tts'))
      await answerSpeech(res, wav, sp.response_format ?? 'wav', usageMeterOf(res))
    }),
  )

  /** The asr serves one model whatever a form names: a restricted key must list it. */
  const checkAsr = async (res: ServerResponse): Promise<void> => {
    const who = requestState(res).consumer
    if (keyRestricted(who)) checkKeyService(who, [await d.lists.asrModelName()], 'asr model')
  }
  const relay = (p: string, upstreamPath: string) =>
    d.route(p, async (req, res) => {
      await checkAsr(res)
      await relayUpload(req, res, d.need('asr'), {
        path: upstreamPath,
        maxBytes: d.uploads.maxBytes,
        idleMs: d.uploads.idleMs,
        timeoutMs: d.proxyTimeoutMs,
        logger: d.logger,
        onWedged: d.probe('asr'),
        usage: usageMeterOf(res),
      })
    })
  router.post('/api/audio/diarize-chunk', relay('/api/audio/diarize-chunk', '/v1/audio/diarize-chunk'))

  /** Receives an upload into the spool, runs `use` on it, and removes it whatever happens. */
  const withUpload = async (
    req: IncomingMessage,
    res: ServerResponse,
    limits: FormFieldLimits | undefined,
    use: (form: ReceivedForm) => Promise<void>,
  ): Promise<void> => {
    const declared = Number(req.headers['content-length'] ?? NaN)
    if (declared > d.uploads.maxBytes) throw tooLarge(d.uploads.maxBytes)
    const holder = spoolHolder(requestState(res).consumer)
    const lease = await d.spool.lease(Number.isFinite(declared) ? declared : 0, holder)
    try {
      await use(await receiveForm(req, lease, d.uploads, 'file', limits))
    } finally {
      lease.release().catch((err: unknown) => d.logger.warn('could not remove a spooled upload', { error: err }))
    }
  }
  const clientGone = (res: ServerResponse): AbortSignal => {
    const ac = new AbortController()
    res.once('close', () => {
      if (!res.writableFinished) ac.abort(new ClientGone())
    })
    return ac.signal
  }

  /**
   * OpenAI's transcription endpoint (issue 43): the form is received whole (the clients send
   * `response_format` and the speaker fields after the file), then either answered by the diarized
   * pipeline or relayed to the asr field for field.
   */
  router.post(
    '/v1/audio/transcriptions',
    d.route('/v1/audio/transcriptions', async (req, res) => {
      await checkAsr(res)
      const asr = d.need('asr')
      await withUpload(req, res, TRANSCRIPTION_FORM, async (form) => {
        const ask = readDiarizedAsk(form.entries)
        const base = { onWedged: d.probe('asr'), usage: usageMeterOf(res) }
        if (ask === null)
          return relaySpooled(res, asr, form, {
            ...base,
            path: '/v1/audio/transcriptions',
            timeoutMs: d.proxyTimeoutMs,
            logger: d.logger,
          })
        await answerDiarized(res, form.file, ask, {
          ...base,
          asr,
          signal: clientGone(res),
          asrModel: () => d.lists.asrModelName(),
        })
      })
    }),
  )

  router.post(
    '/api/audio/transcribe-with-speakers',
    d.route('/api/audio/transcribe-with-speakers', async (req, res) => {
      const asr = d.need('asr')
      await checkAsr(res)
      await withUpload(req, res, undefined, async (form) => {
        const lang = form.fields.get('language')
        const out = await transcribeWithSpeakers(asr, form.file, {
          language: lang !== undefined && /^[a-z]{2,3}(-[A-Z]{2})?$/.test(lang) ? lang : undefined,
          signal: clientGone(res),
          asrModel: () => d.lists.asrModelName(),
          onWedged: d.probe('asr'),
        })
        usageMeterOf(res)?.addAudioSeconds(out.duration)
        sendJson(res, 200, out)
      })
    }),
  )
}

/** A transcription form: room for 4 names and 4 reference clips beside OpenAI's other fields. */
const TRANSCRIPTION_FORM: FormFieldLimits = {
  fields: 32,
  fieldSize: REFERENCE_MAX_CHARS,
  totalFieldBytes: 4 * REFERENCE_MAX_CHARS + 256 * 1024,
}
