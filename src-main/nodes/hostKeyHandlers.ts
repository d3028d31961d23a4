import type { nodesContract } from '../contract/nodes'
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { Logger } from '../lib/logger'
import { HostKeyStore } from '../ssh/hostKeys'
import type { SshPool } from '../ssh/pool'

type HostKeyMethods = 'listKnownHosts' | 'forgetHostKey' | 'listPendingHostKeys' | 'trustHostKey'

/** The SSH host-key methods: what is trusted, forgetting a key, and trusting a key a node presented. */
export function hostKeyHandlers(deps: {
  hostKeys: HostKeyStore
  pool: SshPool
  logger: Logger
  /** Called after a key changed, so the next hardware probe is fresh. */
  onChange: () => void
}): Handlers<Pick<typeof nodesContract, HostKeyMethods>> {
  const { hostKeys, pool, logger } = deps
  return {
    listKnownHosts: async () =>
      hostKeys.list().map(({ name, entry }) => ({
        name,
        type: entry.type,
        fingerprint: entry.fingerprint,
        added_at: entry.added_at,
      })),
    forgetHostKey: async ({ host, port }) => {
      const forgotten = hostKeys.forget(host, port)
      pool.clearUnreachableHost(host, port)
      if (forgotten) logger.info('forgot SSH host key', { host, port })
      deps.onChange()
      return { forgotten }
    },
    listPendingHostKeys: async () => {
      const c = hostKeys.confirmation()
      return { confirmation_required: c.required, kept_as: c.kept_as, pending: hostKeys.pending() }
    },
    trustHostKey: async ({ host, port, fingerprint }) => {
      const res = hostKeys.trust(host, port, fingerprint)
      if (!res.ok) throw new ApiError('conflict', res.message)
      pool.clearUnreachableHost(host, port)
      deps.onChange()
      logger.info('trusted SSH host key by operator confirmation', { host, port, fingerprint })
      return { trusted: true as const, name: HostKeyStore.entryName(host, port), fingerprint: res.entry.fingerprint }
    },
  }
}
