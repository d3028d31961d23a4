import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { z } from 'zod'
import { conflict } from '../contract/errors'
import type { SpeechModelsView, StepResult } from '../contract/services'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import { httpHealth, type HttpHealth } from './healthCheck'
import { PROBE_TIMEOUT_MS, SshError, type SshPool } from '../ssh/pool'
import { shq, shqArgs } from '../ssh/quote'
import type { ServiceControl, ServiceLocation } from './types'

type View = z.infer<typeof SpeechModelsView>
type Steps = z.infer<typeof StepResult>
type Step = Steps['steps'][number]

/** The overlay modules copied into the asr container (their tests stay behind). */
export const OVERLAY_FILES = ['diarize_logic.py', 'diarizer.py', 'asr_app.py'] as const
/** Where the asr image imports its app modules from. */
export const CONTAINER_OVERLAY_DIR = '/app'
/** Spec 1, section 8: the reapply health wait. */
export const HEALTH_WAIT_MS = 120_000
const HEALTH_POLL_MS = 2_000
/** Bounds the wait however the clock behaves (a stuck clock must not poll forever). */
const MAX_HEALTH_TRIES = 90
/** A copy or syntax check carries a few kB; a stuck container must not hold the request for long. */
const COPY_TIMEOUT_MS = 30_000
const ASR = 'asr'

interface LocalOverlay {
  readonly name: string
  readonly containerPath: string
  readonly bytes: Buffer
  readonly sha256: string
}

export interface SpeechPatchesDeps {
  readonly control: ServiceControl
  readonly pool: Pick<SshPool, 'exec'>
  readonly logger: Logger
  readonly clock: Clock
  /** Where the shipped overlay modules are (defaultOverlayDir() in the app). */
  readonly overlayDir: string
  readonly containerDir?: string
  /** How the health wait pauses between tries (tests move a manual clock instead). */
  readonly sleep?: (ms: number) => Promise<void>
  readonly health?: (baseUrl: string) => Promise<HttpHealth>
}

/**
 * Where the overlay modules are: beside the built main bundle (out/main/overlays/asr/, copied by
 * the build), else in the source tree (tests, tsx), else under the working directory.
 */
export function defaultOverlayDir(): string {
  const here = path.dirname(__filename)
  const candidates = [
    path.join(here, 'overlays', 'asr'),
    path.resolve(here, '../../overlays/asr'),
    path.resolve('overlays', 'asr'),
  ]
  return candidates.find((d) => fs.existsSync(path.join(d, OVERLAY_FILES[0]))) ?? (candidates[0] as string)
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

/** `sha256sum` output: hash per path (a missing file prints only to stderr). */
export function parseSha256sum(stdout: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line.trim())
    if (m) out.set(m[2] as string, m[1] as string)
  }
  return out
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** The last lines of a command's error output, for a step's detail. */
function tail(text: string, lines = 8): string {
  return text.trim().split('\n').slice(-lines).join('\n')
}

/**
 * The speech model patches (spec 1, 4.7): the shipped overlay modules against the copies inside
 * the asr container (sha256), reapplying them (copy, syntax check, restart, health wait) and a
 * plain restart.
 */
export class SpeechPatches {
  private busy = false
  private readonly containerDir: string

  constructor(private readonly deps: SpeechPatchesDeps) {
    this.containerDir = deps.containerDir ?? CONTAINER_OVERLAY_DIR
  }

  /** Per overlay file: local and container sha256 and in_sync / drift / missing; the model's readiness. */
  async status(): Promise<View> {
    const locals = this.readLocal()
    const loc = this.deps.control.locate(ASR)
    const [remote, model] = await Promise.all([this.containerHashes(loc, locals), this.readiness(loc)])
    return {
      container: loc?.container ?? '',
      files: locals.map((f) => {
        const theirs = remote.hashes.get(f.containerPath) ?? null
        return {
          name: f.name,
          path: f.containerPath,
          local_sha256: f.sha256,
          container_sha256: theirs,
          status: theirs === null ? 'missing' : theirs === f.sha256 ? 'in_sync' : 'drift',
        }
      }),
      model,
      checked_at: this.deps.clock.now(),
      error: remote.error,
    }
  }

  /** Copy, verify, syntax check, restart, wait for health: stops at the first failing step. */
  async reapply(): Promise<Steps> {
    return this.exclusive(async (steps) => {
      let locals: LocalOverlay[] = []
      const read = await this.step(steps, 'read the shipped overlays', async () => {
        locals = this.readLocal()
        return `${locals.length} files, ${locals.reduce((n, f) => n + f.bytes.length, 0)} bytes`
      })
      if (!read) return
      const loc = this.needAsr(steps)
      if (loc === null) return
      for (const f of locals) {
        if (!(await this.step(steps, `copy ${f.name}`, () => this.copy(loc, f)))) return
      }
      const verified = await this.step(steps, 'verify copies (sha256)', async () => {
        const { hashes, error } = await this.containerHashes(loc, locals)
        const off = locals.filter((f) => hashes.get(f.containerPath) !== f.sha256).map((f) => f.name)
        if (off.length > 0) throw new Error(error ?? `${off.join(', ')} differ inside the container after the copy`)
        return `${locals.length} files match`
      })
      if (!verified) return
      // A module that does not compile would crash the service at start: stop before the restart.
      if (!(await this.step(steps, 'check Python syntax', () => this.compile(loc, locals)))) return
      if (!(await this.step(steps, 'restart the asr container', () => this.restart(loc, 'speech patches reapplied'))))
        return
      await this.step(steps, 'wait for health', () => this.waitHealthy(loc))
    })
  }

  /** A plain restart of the asr container, then the health wait. */
  async restartOnly(): Promise<Steps> {
    return this.exclusive(async (steps) => {
      const loc = this.needAsr(steps)
      if (loc === null) return
      if (!(await this.step(steps, 'restart the asr container', () => this.restart(loc, 'speech patches restart'))))
        return
      await this.step(steps, 'wait for health', () => this.waitHealthy(loc))
    })
  }

  private async exclusive(run: (steps: Step[]) => Promise<void>): Promise<Steps> {
    if (this.busy) throw conflict('a speech-patch reapply or restart is already running')
    this.busy = true
    const steps: Step[] = []
    try {
      await run(steps)
    } finally {
      this.busy = false
    }
    return { ok: steps.length > 0 && steps.every((s) => s.ok), steps }
  }

  private needAsr(steps: Step[]): ServiceLocation | null {
    const loc = this.deps.control.locate(ASR)
    if (loc === null) steps.push({ step: 'locate the asr service', ok: false, detail: 'asr is not configured' })
    return loc
  }

  /** Runs one step and records it; false when it failed. */
  private async step(steps: Step[], name: string, run: () => Promise<string>): Promise<boolean> {
    try {
      steps.push({ step: name, ok: true, detail: await run() })
      return true
    } catch (err) {
      const detail = errorText(err)
      this.deps.logger.warn('speech patch step failed', { step: name, detail })
      steps.push({ step: name, ok: false, detail })
      return false
    }
  }

  private readLocal(): LocalOverlay[] {
    return OVERLAY_FILES.map((name) => {
      const bytes = fs.readFileSync(path.join(this.deps.overlayDir, name))
      return { name, containerPath: `${this.containerDir}/${name}`, bytes, sha256: sha256(bytes) }
    })
  }

  private async containerHashes(
    loc: ServiceLocation | null,
    locals: readonly LocalOverlay[],
  ): Promise<{ hashes: Map<string, string>; error: string | null }> {
    if (loc === null) return { hashes: new Map(), error: 'asr is not configured' }
    const cmd = `docker exec ${shq(loc.container)} sha256sum ${shqArgs(locals.map((f) => f.containerPath))}`
    try {
      const r = await this.deps.pool.exec(loc.ssh, cmd, { timeoutMs: PROBE_TIMEOUT_MS })
      const hashes = parseSha256sum(r.stdout)
      // sha256sum exits 1 when a file is missing; anything else (no container, not running) is an error.
      const missingOnly = r.code === 0 || (r.code === 1 && /No such file/i.test(r.stderr))
      return { hashes, error: missingOnly ? null : tail(r.stderr, 2) || `sha256sum exited ${r.code ?? r.signal}` }
    } catch (err) {
      return { hashes: new Map(), error: err instanceof SshError ? `${loc.ssh.host}: ${err.message}` : errorText(err) }
    }
  }

  private async readiness(loc: ServiceLocation | null): Promise<View['model']> {
    if (loc?.baseUrl == null) return { ready: false, name: null, detail: 'asr has no HTTP address configured' }
    const h = await (this.deps.health ?? httpHealth)(loc.baseUrl)
    return { ready: h.ok, name: h.model, detail: h.ok ? null : h.error }
  }

  /** Streams the file's bytes over SSH stdin into the container: no temp file, no quoting of content. */
  private async copy(loc: ServiceLocation, f: LocalOverlay): Promise<string> {
    const script = `mkdir -p ${shq(this.containerDir)} && cat > ${shq(f.containerPath)}`
    const r = await this.deps.pool.exec(loc.ssh, `docker exec -i ${shq(loc.container)} sh -c ${shq(script)}`, {
      stdin: f.bytes,
      timeoutMs: COPY_TIMEOUT_MS,
    })
    if (r.code !== 0) throw new Error(tail(r.stderr) || `the copy exited ${r.code ?? r.signal}`)
    return `${f.bytes.length} bytes to ${f.containerPath}`
  }

  private async compile(loc: ServiceLocation, locals: readonly LocalOverlay[]): Promise<string> {
    const paths = locals.map((f) => f.containerPath)
    const cmd = `docker exec ${shq(loc.container)} python3 -m py_compile ${shqArgs(paths)}`
    const r = await this.deps.pool.exec(loc.ssh, cmd, { timeoutMs: COPY_TIMEOUT_MS })
    if (r.code !== 0) throw new Error(tail(r.stderr || r.stdout) || `py_compile exited ${r.code ?? r.signal}`)
    return `${paths.length} modules compile`
  }

  private async restart(loc: ServiceLocation, reason: string): Promise<string> {
    await this.deps.control.restart(loc.name, reason)
    return `${loc.container} restarted`
  }

  /** Polls health until it answers OK, for up to 120 s on the clock and at most MAX_HEALTH_TRIES tries. */
  private async waitHealthy(loc: ServiceLocation): Promise<string> {
    if (loc.baseUrl === null) throw new Error('asr has no HTTP address configured')
    const { clock } = this.deps
    const sleep = this.deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
    const started = clock.now()
    let last = 'no answer yet'
    for (let tries = 1; tries <= MAX_HEALTH_TRIES; tries++) {
      const h = await (this.deps.health ?? httpHealth)(loc.baseUrl)
      const waited = Math.round((clock.now() - started) / 1000)
      if (h.ok) return `healthy after ${waited} s${h.model ? `, serving ${h.model}` : ''}`
      last = h.error ?? 'not healthy'
      if (clock.now() - started >= HEALTH_WAIT_MS) break
      await sleep(HEALTH_POLL_MS)
    }
    throw new Error(`not healthy within ${HEALTH_WAIT_MS / 1000} s: ${last}`)
  }
}
