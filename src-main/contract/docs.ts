import { z } from 'zod'
import { method, type ContractTable } from './define'

/** An OpenAPI 3.1 document (system/openapi.ts builds it); checked for its frame only, the rest passes as built. */
export const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
})

/** The API's own description, generated from this contract. */
export const docsContract = {
  openapiPublic: method({
    summary: 'OpenAPI 3.1 document of the public surfaces: the licensing buyer API and the consumer gateway',
    http: 'GET /v1/openapi.json',
    input: z.object({}),
    output: OpenApiDocumentSchema,
    errorStyle: 'licensing',
    httpOnly: true,
    limit: 'public',
  }),
  openapiFull: method({
    summary: 'OpenAPI 3.1 document of every method, admin ones included',
    http: 'GET /api/openapi.json',
    input: z.object({}),
    output: OpenApiDocumentSchema,
  }),
} satisfies ContractTable
