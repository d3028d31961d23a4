import type { Handlers } from '../contract/define'
import { conflict, notFound } from '../contract/errors'
import type { servicesContract } from '../contract/services'
import type { ProbedService } from '../gateway/deepHealthHook'
import { PROBED_SERVICES, type DeepHealth } from './deepHealth'

function isProbed(name: string): name is ProbedService {
  return (PROBED_SERVICES as readonly string[]).includes(name)
}

/** GET /api/deep-health and POST /api/deep-health/{service}/run. */
export function deepHealthHandlers(
  deepHealth: DeepHealth,
): Pick<Handlers<typeof servicesContract>, 'getDeepHealth' | 'runDeepHealth'> {
  return {
    getDeepHealth: async () => deepHealth.view(),
    runDeepHealth: async ({ service }) => {
      if (!isProbed(service))
        throw notFound(`deep health probes ${PROBED_SERVICES.join(', ')}; there is no probe for ${service}`)
      if (!deepHealth.configured(service)) throw conflict(`${service} is not configured, so it cannot be probed`)
      return deepHealth.run(service)
    },
  }
}
