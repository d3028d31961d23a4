import type { ServerResponse } from 'node:http'
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
import type { UploadSpool } from './spool'
import { relayUpload, transcribeWithSpeakers } from './transcribe'
import { receiveForm, tooLarge, type UploadLimits } from './uploads'
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
      const ac = new AbortController()
      res.once('close', () => ac.abort(new ClientGone()))
      const wav = await synthesize(d.need('tts'), sp, ac.signal, d.probe('tts'))
      await answerSpeech(res, wav, sp.response_format ?? 'wav')
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
  router.post('/v1/audio/transcriptions', relay('/v1/audio/transcriptions', '/v1/audio/transcriptions'))
  router.post('/api/audio/diarize-chunk', relay('/api/audio/diarize-chunk', '/v1/audio/diarize-chunk'))

  router.post(
    '/api/audio/transcribe-with-speakers',
    d.route('/api/audio/transcribe-with-speakers', async (req, res) => {
      const asr = d.need('asr')
      await checkAsr(res)
      const declared = Number(req.headers['content-length'] ?? NaN)
      if (declared > d.uploads.maxBytes) throw tooLarge(d.uploads.maxBytes)
      const lease = await d.spool.lease(Number.isFinite(declared) ? declared : 0)
      try {
        const form = await receiveForm(req, lease, d.uploads)
        const lang = form.fields.get('language')
        const ac = new AbortController()
        res.once('close', () => ac.abort(new ClientGone()))
        const out = await transcribeWithSpeakers(asr, form.file, {
          language: lang !== undefined && /^[a-z]{2,3}(-[A-Z]{2})?$/.test(lang) ? lang : undefined,
          signal: ac.signal,
          asrModel: () => d.lists.asrModelName(),
          onWedged: d.probe('asr'),
        })
        usageMeterOf(res)?.addAudioSeconds(out.duration)
        sendJson(res, 200, out)
      } finally {
        lease.release().catch((err: unknown) => d.logger.warn('could not remove a spooled upload', { error: err }))
      }
    }),
  )
}
