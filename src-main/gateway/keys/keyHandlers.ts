import type { consumerKeysContract } from '../../contract/consumerKeys'
import type { Handlers } from '../../contract/define'
import { ApiError } from '../../contract/errors'
import type { Clock } from '../../lib/clock'
import type { ConsumerKeys } from './consumerKeyStore'
import type { KeyUsageStore } from './keyUsage'

export interface KeyHandlerDeps {
  readonly keys: ConsumerKeys
  readonly usage: KeyUsageStore | null
  readonly legacyKeys: number
  readonly clock: Clock
}

/** The Gateway view's consumer keys: create (secret shown once), list, change, delete, usage. */
export function consumerKeyHandlers(d: KeyHandlerDeps): Handlers<typeof consumerKeysContract> {
  const usage = (): KeyUsageStore => {
    if (!d.usage) throw new ApiError('unavailable', `key usage is unavailable: ${d.keys.outage ?? 'no database'}`)
    return d.usage
  }
  return {
    consumerKeysList: async (q) => ({
      ...d.keys.page(q),
      legacy_keys: d.legacyKeys,
      key_required: d.legacyKeys > 0 || d.keys.required,
    }),
    consumerKeyCreate: async (input) => d.keys.create(input),
    consumerKeyUpdate: async ({ id, ...patch }) => d.keys.update(id, patch),
    consumerKeyDelete: async ({ id }) => ({ deleted: d.keys.remove(id) }),
    consumerKeyUsage: async ({ hours, key_id }) => {
      const from = Math.floor(d.clock.now() / 3600_000) * 3600_000 - (hours - 1) * 3600_000
      const used = usage().query(from, key_id)
      return { from, ...used, names: d.keys.names(used.totals.map((t) => t.key_id)) }
    },
  }
}
