import type { HostKeyCheck } from './hostKeys'
import type { ConnectAttempt, ConnectFailure } from './connectDiagnosis'
import type { SshTarget } from './pool'

export type SshErrorKind =
  'unreachable' | 'auth' | 'host_key_changed' | 'host_key_unconfirmed' | 'timeout' | 'cancelled' | 'channel'

export class SshError extends Error {
  constructor(
    readonly kind: SshErrorKind,
    message: string,
    /** Served from the unreachable cache, not a fresh attempt. */
    readonly cached = false,
    /** The host key the node presented, when it was refused (host_key_changed, host_key_unconfirmed). */
    readonly presentedFingerprint: string | null = null,
  ) {
    super(message)
    this.name = 'SshError'
  }
}

/** Why a connection attempt failed: Tandem's key refused (auth), or what the attempt saw (unreachable). */
export function connectError(key: string, attempt: ConnectAttempt, failure: ConnectFailure): SshError {
  if (failure.kind === 'error' && failure.error.level === 'client-authentication')
    return new SshError(
      'auth',
      `${key}: the node refused Tandem's SSH key; add it to ~/.ssh/authorized_keys there (GET /api/ssh/public-key shows the command)`,
    )
  return new SshError('unreachable', `${key}: ${attempt.describe(failure)}`)
}

/** The error for a refused host key: what was presented and how the operator trusts it. */
export function hostKeyRefusal(target: SshTarget, res: Exclude<HostKeyCheck, { ok: true }>): SshError {
  const where = `${target.host}:${target.port}`
  const trust =
    `If that is the node's key, trust it in the Cluster view ` +
    `(or POST /api/ssh/known-hosts/trust with host ${target.host}, port ${target.port} and fingerprint ${res.presented}) and try again.`
  if (res.reason === 'changed')
    return new SshError(
      'host_key_changed',
      `${where}: the host key changed (expected ${res.expected}, got ${res.presented}); connection refused. ` +
        `If the node was reinstalled, trust the new key, or forget the old one with DELETE /api/ssh/known-hosts?host=${target.host}&port=${target.port}. ${trust}`,
      false,
      res.presented,
    )
  return new SshError(
    'host_key_unconfirmed',
    `${where}: host key ${res.presented} is not confirmed; connection refused. ` +
      `Tandem's known-hosts file was unreadable and was kept aside, so no host key is trusted until you confirm it. ${trust}`,
    false,
    res.presented,
  )
}
