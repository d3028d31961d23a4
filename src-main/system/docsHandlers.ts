import type { Config } from '../config/load'
import { contract } from '../contract'
import type { Handlers } from '../contract/define'
import type { docsContract } from '../contract/docs'
import { openApiDocument, type OpenApiAudience, type OpenApiDocument } from './openapi'
import { VERSION } from '../lib/version'

/** The OpenAPI documents, built on first request and kept: the contract does not change while running. */
export function docsHandlers(config: Pick<Config, 'publicUrl'>): Handlers<typeof docsContract> {
  const built = new Map<OpenApiAudience, OpenApiDocument>()
  const doc = (audience: OpenApiAudience): OpenApiDocument => {
    let d = built.get(audience)
    if (!d) {
      d = openApiDocument(contract, { audience, version: VERSION, serverUrl: config.publicUrl })
      built.set(audience, d)
    }
    return d
  }
  return {
    openapiPublic: async () => doc('public'),
    openapiFull: async () => doc('full'),
  }
}
