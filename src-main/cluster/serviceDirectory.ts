import net from 'node:net'
import type { Config, SshTarget } from '../config/load'

/** The services Tandem reaches: three containers it runs over SSH, two it is only pointed at. */
export type ServiceName = 'llm' | 'asr' | 'tts' | 'embeddings' | 'vector'
/** The services that run as containers on a node. */
export type RoleName = 'llm' | 'asr' | 'tts'

export const ROLE_NAMES: readonly RoleName[] = ['llm', 'asr', 'tts']
export const SERVICE_NAMES: readonly ServiceName[] = [...ROLE_NAMES, 'embeddings', 'vector']

/** Where one service lives and how to reach it. */
export interface ServiceLocation {
  readonly name: ServiceName
  /** True when Tandem knows how to reach it (baseUrl is set). */
  readonly configured: boolean
  /** Its HTTP origin (and base path for embeddings and vector), without a trailing slash; null when not configured. */
  readonly baseUrl: string | null
  /** What to set when it is not configured; null when it is. */
  readonly hint: string | null
  readonly host: string | null
  readonly port: number | null
}

/** A service that runs as a container on a node. */
export interface RoleLocation extends ServiceLocation {
  readonly name: RoleName
  /** The node the container runs on; null when neither the role nor its node is configured. */
  readonly ssh: SshTarget | null
  readonly container: string
  readonly port: number
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/

/** A host as it may appear in a URL authority, or null when it is neither an IP address nor an RFC 1123 name. */
export function urlHost(host: string): string | null {
  if (net.isIPv4(host)) return host
  if (net.isIPv6(host)) return `[${host}]`
  return HOSTNAME.test(host) ? host : null
}

/** `http://<host>:<port>` for a configured service, or null when the host is unset or not a valid host. */
export function serviceBase(host: string | undefined | null, port: number): string | null {
  if (!host) return null
  const h = urlHost(host)
  if (h === null || !Number.isInteger(port) || port < 1 || port > 65535) return null
  return `http://${h}:${port}`
}

/** A configured base URL (EMBEDDINGS_URL, VECTOR_URL), re-validated: http(s) only, no credentials, query or fragment. */
export function configuredBase(raw: string | null): string | null {
  if (!raw) return null
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return null
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash) return null
  if (urlHost(u.hostname.replace(/^\[|\]$/g, '')) === null) return null
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

const ROLE_HINTS: Record<RoleName, string> = {
  llm: 'llm is not configured: set NODE1_HOST and NODE1_USER (and LLM_PORT if not 8888)',
  asr: 'asr is not configured: set NODE2_HOST/NODE2_USER or ASR_HOST/ASR_USER',
  tts: 'tts is not configured: set NODE2_HOST/NODE2_USER or TTS_HOST/TTS_USER',
}

/**
 * The one answer to "where does a service live and how do I reach it", built once from Config:
 * for the gateway's upstreams, the status view and deep health alike.
 */
export class ServiceDirectory {
  private readonly byName: Readonly<Record<ServiceName, ServiceLocation>>

  constructor(config: Pick<Config, 'nodes' | 'llm' | 'asr' | 'tts' | 'embeddingsUrl' | 'vectorUrl'>) {
    this.byName = {
      llm: role('llm', config.nodes.node1, config.llm.container, config.llm.port),
      asr: role('asr', config.asr.ssh, config.asr.container, config.asr.port),
      tts: role('tts', config.tts.ssh, config.tts.container, config.tts.port),
      embeddings: pointedAt('embeddings', config.embeddingsUrl, 'EMBEDDINGS_URL', 'embeddings upstream'),
      vector: pointedAt('vector', config.vectorUrl, 'VECTOR_URL', 'vector store'),
    }
  }

  get(name: ServiceName): ServiceLocation {
    return this.byName[name]
  }

  role(name: RoleName): RoleLocation {
    return this.byName[name] as RoleLocation
  }

  roles(): Record<RoleName, RoleLocation> {
    return { llm: this.role('llm'), asr: this.role('asr'), tts: this.role('tts') }
  }

  all(): ServiceLocation[] {
    return SERVICE_NAMES.map((n) => this.byName[n])
  }
}

function role(name: RoleName, ssh: SshTarget | null, container: string, port: number): RoleLocation {
  const baseUrl = serviceBase(ssh?.host, port)
  let hint: string | null = null
  if (!ssh) hint = ROLE_HINTS[name]
  else if (baseUrl === null) hint = `${name} host ${JSON.stringify(ssh.host)} or port ${port} is not usable in a URL`
  return { name, configured: baseUrl !== null, baseUrl, hint, host: ssh?.host ?? null, port, ssh, container }
}

function pointedAt(name: ServiceName, raw: string | null, setting: string, what: string): ServiceLocation {
  const baseUrl = configuredBase(raw)
  let hint: string | null = null
  if (!raw) hint = `${what} is not configured: set ${setting}`
  else if (baseUrl === null) hint = `${setting} is not a usable http(s) URL (no credentials, query or fragment)`
  let host: string | null = null
  let port: number | null = null
  if (baseUrl !== null) {
    const u = new URL(baseUrl)
    host = u.hostname.replace(/^\[|\]$/g, '')
    port = Number(u.port || (u.protocol === 'https:' ? 443 : 80))
  }
  return { name, configured: baseUrl !== null, baseUrl, hint, host, port }
}
