import { fingerprintOfLine } from '../../src-main/ssh/fingerprint'
import { sshKeyView } from '../../src-main/ssh/authorize'
import { configFile } from '../config'
import { sdk } from '../sdk'

/** Spec 000 §5.3: the public key and a ready-to-paste command per configured node. */
export const showSshKey = sdk.Action.withoutInput(
  'show-ssh-key',
  {
    name: 'Show SSH key',
    description: "Tandem's SSH public key and, per configured node, the command that authorizes it there",
    warning: null,
    allowedStatuses: 'any',
    group: 'Access',
    visibility: 'enabled',
  },
  async () => {
    const publicKey = await readVolumeText('ssh/id_ed25519.pub')
    if (publicKey === null)
      return {
        version: '1' as const,
        title: 'No SSH key yet',
        message: 'Tandem generates its key pair on its first start. Start the service, then run this action again.',
        result: null,
      }
    const config = await configFile.read().once()
    const target = (host: string | undefined, user: string | undefined) =>
      host && user ? { host, user, port: 22 } : null
    const view = sshKeyView(
      { publicKey, fingerprint: fingerprintOfLine(publicKey) },
      { node1: target(config?.NODE1_HOST, config?.NODE1_USER), node2: target(config?.NODE2_HOST, config?.NODE2_USER) },
    )
    const single = (name: string, description: string | null, value: string) => ({
      type: 'single' as const,
      name,
      description,
      value,
      copyable: true,
      qr: false,
      masked: false,
    })
    return {
      version: '1' as const,
      title: 'SSH key',
      message:
        view.nodes.length === 0
          ? 'Configure node1 and node2 to get a command per node.'
          : 'Run each command once from a machine that can already log in to that node.',
      result: {
        type: 'group' as const,
        value: [
          single('Public key', view.fingerprint, view.public_key),
          ...view.nodes.map((n) =>
            single(`${n.node} (${n.user}@${n.host})`, `or on ${n.node} itself: ${n.remote_command}`, n.command),
          ),
        ],
      },
    }
  },
)

/** A text file on the data volume, trimmed; null when it does not exist yet. */
export async function readVolumeText(subpath: string): Promise<string | null> {
  try {
    const text = String(await sdk.volumes.main.readFile(subpath, 'utf8')).trim()
    return text === '' ? null : text
  } catch {
    return null
  }
}
