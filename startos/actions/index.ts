import { sdk } from '../sdk'
import { configure } from './configure'
import { showAdminToken } from './showAdminToken'
import { showSshKey } from './showSshKey'
import { showWebhookUrls } from './showWebhookUrls'

export const actions = sdk.Actions.of()
  .addAction(configure)
  .addAction(showSshKey)
  .addAction(showAdminToken)
  .addAction(showWebhookUrls)
