import { nodeNames } from '../config/nodes'
import { shq } from './quote'

/**
 * The commands that authorize Tandem's public key on a node: shown by the dashboard, `tandem
 * ssh-key` and the StartOS action alike. Pure (no ssh2, no fs) so the package wrapper can use it.
 */

export interface AuthorizeTarget {
  readonly host: string
  readonly user: string
  readonly port: number
}

/** Appends the key to ~/.ssh/authorized_keys on the node, once, with the right modes. */
export function authorizeCommand(publicKey: string): string {
  const line = shq(publicKey)
  return `umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && (grep -qxF ${line} ~/.ssh/authorized_keys || printf '%s\\n' ${line} >> ~/.ssh/authorized_keys)`
}

/** Tandem's public key and, per configured node, the command that authorizes it there. */
export function sshKeyView(
  key: { readonly publicKey: string; readonly fingerprint: string },
  targets: Readonly<Record<string, AuthorizeTarget | null | undefined>>,
) {
  return {
    public_key: key.publicKey,
    fingerprint: key.fingerprint,
    nodes: nodeNames({ nodes: targets }).flatMap((node) => {
      const t = targets[node]
      if (!t) return []
      const remote = authorizeCommand(key.publicKey)
      const portFlag = t.port === 22 ? '' : `-p ${t.port} `
      return [
        {
          node,
          host: t.host,
          user: t.user,
          port: t.port,
          remote_command: remote,
          command: `ssh ${portFlag}${shq(`${t.user}@${t.host}`)} ${shq(remote)}`,
        },
      ]
    }),
  }
}
