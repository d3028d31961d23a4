import { sdk } from './sdk'
import { TANDEM_PORT } from './manifest'

/** Interface ids (spec 000 §1.1): the web UI at the root and the API entry at /api/endpoints. */
export const UI_INTERFACE = 'ui'
export const API_INTERFACE = 'api'
export const HOST_ID = 'main'

export const interfaceSpecs = [
  {
    id: UI_INTERFACE,
    name: 'Web UI',
    description: 'The dashboard: cluster, models, services, gateway, licensing and settings',
    type: 'ui' as const,
    path: '',
  },
  {
    id: API_INTERFACE,
    name: 'API',
    description:
      'Where LAN clients find the llm, asr and tts endpoints (GET /api/endpoints); the OpenAI-compatible API is under /v1 on the same port',
    type: 'api' as const,
    path: '/api/endpoints',
  },
]

export const setInterfaces = sdk.setupInterfaces(async ({ effects }) => {
  const origin = await sdk.MultiHost.of(effects, HOST_ID).bindPort(TANDEM_PORT, { protocol: 'http' })
  const receipt = await origin.export(
    interfaceSpecs.map((spec) =>
      sdk.createInterface(effects, {
        ...spec,
        masked: false,
        schemeOverride: null,
        username: null,
        query: {},
      }),
    ),
  )
  return [receipt]
})
