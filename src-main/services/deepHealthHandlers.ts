import type { Handlers } from '../contract/define'
import { conflict, notFound } from '../contract/errors'
import type { servicesContract } from '../contract/services'
import type { DeepHealth } from './deepHealth'
import { isProbeSubject, PROBED_SERVICES } from './deepHealthRecords'

/** GET /api/deep-health and POST /api/deep-health/{service}/run. */
export function deepHealthHandlers(
  deepHealth: DeepHealth,
): Pick<Handlers<typeof servicesContract>, 'getDeepHealth' | 'runDeepHealth'> {
  return {
    getDeepHealth: async () => deepHealth.view(),
    runDeepHealth: async ({ service }) => {
      if (!isProbeSubject(service))
        throw notFound(
          `deep health probes ${PROBED_SERVICES.join(', ')} and each placement as llm@<placement id>; there is no probe for ${service}`,
        )
      if (!deepHealth.configured(service))
        throw conflict(`${service} is not configured or not placed, so it cannot be probed`)
      return deepHealth.run(service)
    },
  }
}
