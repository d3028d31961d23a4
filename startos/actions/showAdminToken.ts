import { sdk } from '../sdk'
import { readVolumeText } from './showSshKey'

/** The generated admin token: the dashboard login and the Bearer token of the control API. */
export const showAdminToken = sdk.Action.withoutInput(
  'show-admin-token',
  {
    name: 'Show admin token',
    description: 'The token for the dashboard login and for Authorization: Bearer on the control API',
    warning: 'Anyone with this token controls the cluster and the licensing shop.',
    allowedStatuses: 'any',
    group: 'Access',
    visibility: 'enabled',
  },
  async () => {
    const token = await readVolumeText('admin-token')
    return {
      version: '1' as const,
      title: 'Admin token',
      message: token === null ? 'Tandem generates its admin token on its first start. Start the service first.' : null,
      result:
        token === null ? null : { type: 'single' as const, value: token, copyable: true, qr: false, masked: true },
    }
  },
)
