import fs from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import YAML from 'yaml'
import type { Config } from '../config/load'
import { ApiError } from '../contract/errors'
import { PrebuiltImage, type PrebuiltInstallInput } from '../contract/services'
import type { JobRecord } from '../contract/system'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobControl, JobRegistry } from '../platform/jobs'
import { parseSize } from '../models/types'
import type { SshPool, SshTarget } from '../ssh/pool'
import { shq } from '../ssh/quote'
import type { ServiceManager } from './manager'

/** The environment variable prebuilt images read the registry key from (NGC's convention). */
export const REGISTRY_KEY_ENV = 'NGC_API_KEY'
/** NGC's fixed user name for API-key logins. */
const REGISTRY_USER = '$oauthtoken'
/** Prebuilt images run as this user and must own their model cache. */
const CACHE_OWNER = '1000:1000'
const LOGIN_TIMEOUT_MS = 60_000
const PULL_TIMEOUT_MS = 60 * 60_000
const RUN_TIMEOUT_MS = 120_000

export type PrebuiltInstall = z.output<typeof PrebuiltInstallInput>

/** Where the bundled catalog is: beside the built main bundle, else the source tree's resources/. */
export function defaultPrebuiltFile(): string {
  const here = path.dirname(__filename)
  const candidates = [
    path.join(here, 'resources', 'prebuilt.yaml'),
    path.resolve(here, '../../resources/prebuilt.yaml'),
    path.resolve('resources', 'prebuilt.yaml'),
  ]
  return candidates.find((f) => fs.existsSync(f)) ?? (candidates[0] as string)
}

/** The registry an image comes from: its first path part when that names a host, else Docker Hub. */
export function registryOf(image: string): string | null {
  const first = image.split('/')[0] as string
  if (!image.includes('/')) return null
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first : null
}

/**
 * `docker pull` output (one line per layer status) → bytes done and total over the layers whose
 * size is known. `Downloading [==>  ]  12.5MB/98.3MB`; `Pull complete` and `Already exists` count as done.
 */
export class PullProgress {
  private readonly layers = new Map<string, { done: number; total: number | null }>()

  /** Returns true when the line was a progress line (not worth a log line of its own). */
  feed(line: string): boolean {
    const m = /^([0-9a-f]{6,64}): (.+)$/.exec(line.trim())
    if (!m) return false
    const [, id, status] = m as unknown as [string, string, string]
    const layer = this.layers.get(id) ?? { done: 0, total: null }
    this.layers.set(id, layer)
    const bytes = /^Downloading\s.*?([\d.]+[kMGT]?B)\/([\d.]+[kMGT]?B)\s*$/.exec(status)
    if (bytes) {
      layer.done = size(bytes[1] as string) ?? layer.done
      layer.total = size(bytes[2] as string) ?? layer.total
      return true
    }
    if (/^(Download complete|Pull complete|Already exists|Verifying Checksum)/.test(status)) {
      if (layer.total !== null) layer.done = layer.total
      return false
    }
    return /^(Extracting|Waiting)/.test(status)
  }

  figures(): { bytes_done: number; bytes_total: number; percent: number } | null {
    let done = 0
    let total = 0
    for (const l of this.layers.values()) {
      if (l.total === null) continue
      done += l.done
      total += l.total
    }
    if (total === 0) return null
    return { bytes_done: done, bytes_total: total, percent: Math.min(100, Math.round((done / total) * 1000) / 10) }
  }
}

function size(text: string): number | null {
  return parseSize(text.replace(/B$/, ''))
}

export interface PrebuiltDeps {
  config: Pick<Config, 'nodes' | 'registryApiKey'>
  pool: SshPool
  jobs: JobRegistry
  manager: ServiceManager
  clock: Clock
  logger: Logger
  catalogFile?: string
}

/**
 * The prebuilt catalog and installs (spec 1, 4.5). The registry key reaches the node only on
 * stdin: `docker login --password-stdin`, and for `docker run` a `NAME="$(cat)"` prefix that puts
 * it in docker's environment, from which `-e NAME` copies it into the container. It is never part
 * of a command line, a job line or a log field.
 */
export class Prebuilt {
  constructor(private readonly deps: PrebuiltDeps) {
    // The job log splits lines before redacting: each line of a multi-line key must match on its own.
    const key = deps.config.registryApiKey
    deps.logger.redactor.add(key)
    for (const part of (key ?? '').split(/\r?\n/)) deps.logger.redactor.add(part.trim() || null)
  }

  catalog(): z.infer<typeof PrebuiltImage>[] {
    const file = this.deps.catalogFile ?? defaultPrebuiltFile()
    const doc = YAML.parse(fs.readFileSync(file, 'utf8')) as { images?: unknown[] } | null
    const images: z.infer<typeof PrebuiltImage>[] = []
    for (const entry of doc?.images ?? []) {
      const parsed = PrebuiltImage.safeParse(entry)
      if (parsed.success) images.push(parsed.data)
      else this.deps.logger.warn('prebuilt catalog entry skipped', { file, error: parsed.error.issues[0]?.message })
    }
    return images
  }

  /** Starts the install job (409 while another install runs). */
  install(input: PrebuiltInstall): JobRecord {
    const ssh = this.deps.config.nodes[input.node]
    if (!ssh) throw new ApiError('conflict', `${input.node} is not configured`)
    const name = serviceNameFor(input.container)
    if (name === 'llm' || name === 'asr' || name === 'tts')
      throw new ApiError('conflict', `the container name ${input.container} is an always-on service's name`)
    return this.deps.jobs.start('prebuilt', `Install ${input.image} as ${input.container} on ${input.node}`, (job) =>
      this.run(job, input, ssh, name),
    )
  }

  private async run(job: JobControl, input: PrebuiltInstall, ssh: SshTarget, name: string): Promise<unknown> {
    let phase = 'Starting'
    const step = (p: string): void => {
      phase = p
      job.phase(p)
    }
    try {
      const key = this.deps.config.registryApiKey
      step('Logging in to the registry')
      await this.login(job, input.image, ssh, key)
      step('Pulling the image')
      await this.pull(job, input.image, ssh)
      step('Starting the container')
      await this.exec(job, ssh, runCommand(input, key !== null), { stdin: key ?? undefined, timeoutMs: RUN_TIMEOUT_MS })
      step('Giving the model cache to uid 1000')
      const chown = `docker exec -u 0 ${shq(input.container)} chown -R ${shq(CACHE_OWNER)} ${shq(input.cache_path)}`
      await this.exec(job, ssh, chown, { timeoutMs: RUN_TIMEOUT_MS })
      step('Restarting')
      await this.exec(job, ssh, `docker restart ${shq(input.container)}`, { timeoutMs: RUN_TIMEOUT_MS })
      step('Registering the service')
      this.deps.manager.saveCustom({
        name,
        node: input.node,
        container: input.container,
        port: input.port,
        image: input.image,
        volume: input.volume,
        cache_path: input.cache_path,
        role: input.role,
        added_at: this.deps.clock.now(),
      })
      job.log(`installed: service ${name} on ${input.node}, port ${input.port}`)
      return { service: name, node: input.node, container: input.container, port: input.port }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      job.log(`failed while ${phase.toLowerCase()}: ${message}`)
      throw new Error(`${phase}: ${message}`, { cause: err })
    }
  }

  private async login(job: JobControl, image: string, ssh: SshTarget, key: string | null): Promise<void> {
    if (key === null) {
      job.log('no registry key configured (REGISTRY_API_KEY): pulling without logging in')
      return
    }
    const registry = registryOf(image)
    const cmd = `docker login --username ${shq(REGISTRY_USER)} --password-stdin${registry ? ` ${shq(registry)}` : ''}`
    await this.exec(job, ssh, cmd, { stdin: key, timeoutMs: LOGIN_TIMEOUT_MS })
  }

  private async pull(job: JobControl, image: string, ssh: SshTarget): Promise<void> {
    const progress = new PullProgress()
    await this.exec(job, ssh, `docker pull ${shq(image)}`, {
      timeoutMs: PULL_TIMEOUT_MS,
      onLine: (line) => {
        if (progress.feed(line)) {
          const f = progress.figures()
          if (f) job.progress(f)
          return
        }
        job.log(line)
      },
    })
    const f = progress.figures()
    if (f) job.progress({ ...f, percent: 100, bytes_done: f.bytes_total })
  }

  /** Runs one command; its lines go to the job log (unless `onLine` takes them); a failure throws. */
  private async exec(
    job: JobControl,
    ssh: SshTarget,
    command: string,
    opts: { stdin?: string; timeoutMs: number; onLine?: (line: string) => void },
  ): Promise<void> {
    const res = await this.deps.pool.exec(ssh, command, {
      timeoutMs: opts.timeoutMs,
      signal: job.signal,
      stdin: opts.stdin,
      onLine: opts.onLine ?? ((line) => job.log(line)),
    })
    if (res.code !== 0) {
      const why = res.stderr.trim().split('\n').slice(-3).join(' ') || `exit ${res.code}`
      throw new Error(`${command.split(' ').slice(0, 2).join(' ')} failed: ${why}`)
    }
  }
}

/**
 * `docker run -d` with all GPUs, the port, the cache volume, the env and restart unless-stopped.
 * With a key, `NAME="$(cat)"` reads it from stdin into docker's own environment only.
 */
export function runCommand(input: PrebuiltInstall, withKey: boolean): string {
  const args = [
    'docker run -d',
    `--name ${shq(input.container)}`,
    '--gpus all',
    `-p ${shq(`${input.port}:${input.container_port ?? input.port}`)}`,
    `-v ${shq(`${input.volume}:${input.cache_path}`)}`,
    ...Object.entries(input.env).map(([k, v]) => `-e ${shq(`${k}=${v}`)}`),
    ...(withKey ? [`-e ${REGISTRY_KEY_ENV}`] : []),
    '--restart unless-stopped',
    shq(input.image),
  ]
  return (withKey ? `${REGISTRY_KEY_ENV}="$(cat)" ` : '') + args.join(' ')
}

/** A container name as a service name: lower case, dots as dashes. */
export function serviceNameFor(container: string): string {
  return container
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .slice(0, 63)
}
