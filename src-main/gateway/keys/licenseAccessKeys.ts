import type { AccessGrant, AccessKeys } from '../../platform/accessKeys'
import type { ConsumerKeys } from './consumerKeyStore'

/** The gateway's side of AccessKeys: a license's key is a named consumer key bound to it. */
export function licenseAccessKeys(keys: ConsumerKeys): AccessKeys {
  const limits = (g: AccessGrant) => ({
    models: g.models === null ? null : [...g.models],
    requests_per_minute: g.requestsPerMinute,
    max_concurrent: g.concurrentStreams,
  })
  return {
    issue(licenseId, name, grant) {
      const k = keys.create({ name, ...limits(grant) }, licenseId)
      return { secret: k.secret, prefix: k.prefix }
    },
    rotate(licenseId) {
      const cur = keys.forLicense(licenseId)
      if (!cur) return null
      const k = keys.rotate(cur.id)
      return { secret: k.secret, prefix: k.prefix }
    },
    tokensUsed(licenseId, periodStart) {
      const cur = keys.forLicense(licenseId)
      if (!cur) return null
      return keys.licenses.used(cur.id, periodStart)
    },
    audioSecondsUsed(licenseId, periodStart) {
      const cur = keys.forLicense(licenseId)
      if (!cur) return null
      return keys.licenses.audioUsed(cur.id, periodStart)
    },
    periodModels(periods) {
      const asked = new Map(periods.map((p) => [p.licenseId, p.periodStart]))
      return keys.licenses.periods?.licenseModels(asked, (id) => keys.licenseOf(id)) ?? new Map()
    },
    setGrant(licenseId, grant) {
      const cur = keys.forLicense(licenseId)
      if (!cur) return false
      keys.update(cur.id, limits(grant))
      return true
    },
  }
}
