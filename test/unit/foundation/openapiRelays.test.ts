import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { contract } from '../../../src-main/contract'
import { splitRoute, type ContractTable } from '../../../src-main/contract/define'
import { openApiDocument, type OpenApiDocument } from '../../../src-main/system/openapi'
import { gatewayContract } from '../../../src-main/contract/gateway'
import { gatewayRelays } from '../../../src-main/contract/relays'
import { createCore, type Core } from '../../../src-main/compose'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'
import { gatewayEndpoints } from '../../../src-main/gateway/handlers'
import { surfaceOf } from '../../../src-main/http/surfaces'

/**
 * The gateway's relayed routes (raw routes outside the contract) in both OpenAPI documents: their
 * bodies, answers, errors and credential, and a check that no consumer route is mounted undocumented.
 */
const table = contract as ContractTable
type Json = Record<string, unknown>
type Op = Json & { responses: Record<string, Json>; requestBody?: Json; security?: unknown }

const docs: Record<'public' | 'full', OpenApiDocument> = {
  public: openApiDocument(table, { audience: 'public', version: '0' }),
  full: openApiDocument(table, { audience: 'full', version: '0' }),
}
const op = (doc: OpenApiDocument, p: string, verb: string): Op => {
  const o = doc.paths[p]?.[verb] as Op | undefined
  if (!o) throw new Error(`${verb.toUpperCase()} ${p} is not documented`)
  return o
}
const bodySchema = (o: Op, type: string): Json =>
  ((o.requestBody as { content: Record<string, { schema: Json }> }).content[type] ?? { schema: {} }).schema
const answerTypes = (o: Op, status: string): string[] =>
  Object.keys((o.responses[status] as { content?: object } | undefined)?.content ?? {}).sort()

const RELAYED = [
  ['post', '/v1/chat/completions'],
  ['post', '/v1/completions'],
  ['post', '/v1/embeddings'],
  ['get', '/v1/models'],
  ['post', '/v1/audio/speech'],
  ['post', '/v1/audio/transcriptions'],
] as const

describe('OpenAPI documents: the gateway relays', () => {
  for (const audience of ['public', 'full'] as const) {
    it(`the ${audience} document lists every relayed route with the consumer credential, and is valid`, async () => {
      const doc = docs[audience]
      const consumerSecurity = op(doc, '/api/endpoints', 'get').security
      expect(consumerSecurity).toEqual([{}, { consumerBearer: [] }])
      for (const [verb, p] of RELAYED) {
        const o = op(doc, p, verb)
        expect(o.summary, p).toEqual(expect.any(String))
        expect(String(o.description ?? '').length, p).toBeGreaterThan(20)
        expect(o.security, p).toEqual(consumerSecurity)
        expect(o.tags, p).toEqual(['consumer'])
        expect(o.operationId, p).toEqual(expect.any(String))
      }
      const v = new Validator()
      const res = await v.validate(doc)
      expect(res.errors ?? null).toBeNull()
      expect(v.version).toBe('3.1')
    })
  }

  it('documents the JSON bodies with their required members, open to any other member', () => {
    const cases: [string, string[]][] = [
      ['/v1/chat/completions', ['messages', 'model']],
      ['/v1/completions', ['model', 'prompt']],
      ['/v1/embeddings', ['input', 'model']],
      // Tandem reads a speech body itself: input and voice are what it refuses without.
      ['/v1/audio/speech', ['input', 'voice']],
    ]
    for (const [p, required] of cases) {
      const o = op(docs.public, p, 'post')
      expect(o.requestBody?.required, p).toBe(true)
      const schema = bodySchema(o, 'application/json')
      expect(schema.type, p).toBe('object')
      expect([...(schema.required as string[])].sort(), p).toEqual(required)
      expect(schema.additionalProperties, p).toBe(true)
    }
    expect(
      Object.keys(bodySchema(op(docs.public, '/v1/audio/speech', 'post'), 'application/json').properties as object),
    ).toContain('model')
    expect(op(docs.public, '/v1/models', 'get').requestBody).toBeUndefined()
  })

  it('documents transcription as a multipart form with a binary file and the model', () => {
    const form = bodySchema(op(docs.public, '/v1/audio/transcriptions', 'post'), 'multipart/form-data')
    expect(form.type).toBe('object')
    expect([...(form.required as string[])].sort()).toEqual(['file', 'model'])
    expect((form.properties as Record<string, Json>).file).toMatchObject({ type: 'string', format: 'binary' })
  })

  it('documents the answer types: JSON, an event stream when stream is true, audio for speech', () => {
    for (const p of ['/v1/chat/completions', '/v1/completions'])
      expect(answerTypes(op(docs.full, p, 'post'), '200'), p).toEqual(['application/json', 'text/event-stream'])
    expect(answerTypes(op(docs.full, '/v1/embeddings', 'post'), '200')).toEqual(['application/json'])
    expect(answerTypes(op(docs.full, '/v1/audio/speech', 'post'), '200')).toEqual(['audio/pcm', 'audio/wav'])
    // Issue 43: a diarized request with stream=true answers server-sent events.
    expect([...answerTypes(op(docs.full, '/v1/audio/transcriptions', 'post'), '200')].sort()).toEqual([
      'application/json',
      'text/event-stream',
      'text/plain',
    ])
    const models = op(docs.full, '/v1/models', 'get').responses['200'] as {
      content: Record<string, { schema: Json }>
    }
    expect(models.content['application/json']!.schema).toMatchObject({
      type: 'object',
      properties: { data: { type: 'array' } },
    })
  })

  it('documents the error answers the gateway sends, in OpenAI error shape on /v1', () => {
    const chat = op(docs.full, '/v1/chat/completions', 'post')
    for (const status of ['400', '401', '403', '408', '413', '429', '502', '503', '504'])
      expect(chat.responses[status], status).toMatchObject({
        content: { 'application/json': { schema: { $ref: '#/components/schemas/OpenAIError' } } },
      })
    expect(chat.responses['503']).toMatchObject({ headers: { 'Retry-After': expect.any(Object) } })
    expect(chat.responses['429']).toMatchObject({ headers: { 'Retry-After': expect.any(Object) } })
    const upload = op(docs.full, '/v1/audio/transcriptions', 'post')
    for (const status of ['400', '401', '408', '413', '429', '502', '503', '504'])
      expect(upload.responses[status], status).toBeDefined()
    expect(upload.responses['403']).toBeUndefined()
    // Listing models reads no body and asks no single upstream: only the edge can refuse it.
    expect(Object.keys(op(docs.full, '/v1/models', 'get').responses).sort()).toEqual(['200', '401', '429'])
    // The /api/audio uploads answer in the control shape, and may meet a full disk.
    const diarized = op(docs.full, '/api/audio/transcribe-with-speakers', 'post')
    expect(diarized.responses['507']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ControlError' } } },
    })
  })

  it('describes each relay once, on a path no contract method serves', () => {
    const contractRoutes = new Set(Object.values(table).map((d) => d.http))
    for (const route of Object.keys(gatewayRelays)) {
      expect(contractRoutes.has(route as never), route).toBe(false)
      expect(surfaceOf(splitRoute(route as `POST /${string}`).path), route).toBe('consumer')
    }
    const ids = Object.values(docs.full.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId))
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('GET /v1/models in the documents', () => {
  it('says it lists every model the placements serve, not one loaded llm model', () => {
    for (const doc of [docs.public, docs.full]) {
      const list = op(doc, '/v1/models', 'get')
      expect(list.summary).toBe('Every model the placements serve, the asr model and every tts voice')
      expect(String(list.description)).toContain('each placement’s engine')
      expect(`${String(list.summary)} ${String(list.description)}`).not.toMatch(/loaded llm model|the llm’s models/i)
    }
  })
})

describe('the Gateway view lists the same routes', () => {
  it('takes each relay and consumer method row from its one description', () => {
    const rows = gatewayEndpoints()
    for (const [route, def] of Object.entries(gatewayRelays)) {
      const { verb, path: p } = splitRoute(route as `POST /${string}`)
      expect(rows, route).toContainEqual({ method: verb, path: p, summary: def.summary })
    }
    for (const name of ['keyPeriodUsage', 'scrub', 'rehydrate', 'search'] as const) {
      const { verb, path: p } = splitRoute(gatewayContract[name].http)
      expect(rows, name).toContainEqual({ method: verb, path: p, summary: gatewayContract[name].summary })
    }
    expect(rows).toHaveLength(Object.keys(gatewayRelays).length + 4)
  })
})

describe('every raw consumer route the app mounts is documented', () => {
  let core: Core
  let dataDir: string
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-openapi-'))
    const config = loadConfig({
      env: { DATA_DIR: dataDir, RATE_SOURCES: 'http://127.0.0.1:9', MONITOR_INTERVAL_S: '0' },
    })
    core = await createCore({ config, logger: createLogger({ redactor: new Redactor(), sink: new MemorySink() }) })
  })
  afterAll(async () => {
    await core?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** The routes the domain modules mount beside the contract, as `VERB /path`. */
  function mountedRawRoutes(): string[] {
    const router = express.Router()
    for (const m of core.modules) m.mountRoutes?.(router)
    const out: string[] = []
    for (const layer of router.stack as { route?: { path: string; methods: Record<string, boolean> } }[]) {
      if (!layer.route) continue
      for (const verb of Object.keys(layer.route.methods)) out.push(`${verb.toUpperCase()} ${layer.route.path}`)
    }
    return out
  }

  it('finds the gateway relays among the mounted routes, so the check below sees them', () => {
    const mounted = mountedRawRoutes()
    expect(mounted).toContain('POST /v1/chat/completions')
    expect(mounted).toContain('GET /v1/models')
    expect(mounted).toContain('POST /v1/audio/transcriptions')
  })

  it('documents every mounted raw route on the consumer surface, and documents none that is not mounted', () => {
    const mounted = mountedRawRoutes().filter((r) => surfaceOf(r.slice(r.indexOf(' ') + 1)) === 'consumer')
    const documented = Object.entries(docs.public.paths)
      .flatMap(([p, ops]) =>
        Object.entries(ops).map(([verb, o]) => ({ route: `${verb.toUpperCase()} ${p}`, id: o.operationId as string })),
      )
      .filter((o) => !(o.id in table))
      .map((o) => o.route)
    expect([...documented].sort()).toEqual([...mounted].sort())
    expect([...Object.keys(gatewayRelays)].sort()).toEqual([...mounted].sort())
  })
})
