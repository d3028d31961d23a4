import { HOST_ID, UI_INTERFACE } from '../interfaces'
import { TANDEM_PORT } from '../manifest'
import { sdk } from '../sdk'

/** The payment providers' webhook paths (spec 001: BTCPay signs its calls; Zaprite's are re-fetched). */
export const WEBHOOK_PATHS = [
  { provider: 'BTCPay Server', path: '/v1/btcpay/webhook' },
  { provider: 'Zaprite', path: '/v1/zaprite/webhook' },
] as const

/** Every address of the web interface joined with each webhook path. */
export function webhookUrls(baseUrls: readonly string[]): { provider: string; urls: string[] }[] {
  const bases = baseUrls.map((u) => u.replace(/\/+$/, ''))
  return WEBHOOK_PATHS.map((w) => ({ provider: w.provider, urls: bases.map((b) => `${b}${w.path}`) }))
}

export const showWebhookUrls = sdk.Action.withoutInput(
  'show-webhook-urls',
  {
    name: 'Show licensing webhook URLs',
    description: 'The URLs to register with BTCPay Server and Zaprite so payments settle in Tandem',
    warning: null,
    allowedStatuses: 'any',
    group: 'Licensing',
    visibility: 'enabled',
  },
  async ({ effects }) => {
    const host = await sdk.host.getOwn(effects, HOST_ID).once()
    const info = host?.bindings[TANDEM_PORT]?.interfaces[UI_INTERFACE]?.addressInfo
    const bases = info ? info.nonLocal.format() : []
    const groups = webhookUrls(bases)
    return {
      version: '1' as const,
      title: 'Licensing webhook URLs',
      message:
        bases.length === 0
          ? 'No address is assigned to the web interface yet; start the service and try again.'
          : 'Use an address the payment provider can reach (a public domain or a Tor address for a remote provider).',
      result: {
        type: 'group' as const,
        value: groups.flatMap((g) =>
          g.urls.map((url) => ({
            type: 'single' as const,
            name: g.provider,
            description: null,
            value: url,
            copyable: true,
            qr: false,
            masked: false,
          })),
        ),
      },
    }
  },
)
