import os from 'node:os'
import type { Config } from './load'

/**
 * Tandem's own public base URL, the one place it is worked out: PUBLIC_URL when set, else the
 * bind address and port (a wildcard bind is reported as the machine's first LAN IPv4 address,
 * which clients can reach). Used for the gateway's base URLs and for checkout and poll links.
 */
export function publicBaseUrl(config: Pick<Config, 'publicUrl' | 'bind' | 'port'>): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '')
  let host = config.bind
  if (host === '0.0.0.0' || host === '::' || host === '') {
    const lan = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)
    host = lan?.address ?? os.hostname()
  }
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`
}
