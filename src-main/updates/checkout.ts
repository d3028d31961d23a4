import { randomBytes } from 'node:crypto'
import type { z } from 'zod'
import type { PendingCommit, UpdateStatus } from '../contract/services'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { SshPool, SshTarget } from '../ssh/pool'
import { remoteDir, shq } from '../ssh/quote'

/** A fetch that hangs (a dead origin, a stuck credential prompt) must not hang the status. */
export const FETCH_TIMEOUT_S = 30
const STATUS_TIMEOUT_MS = (FETCH_TIMEOUT_S + 20) * 1000
/** The most pending commits listed (and given to the llm). */
export const MAX_PENDING = 200
export const UPSTREAM = 'origin/main'

/** Fields of one `git log` record: unit separators between fields, a record separator after each. */
const LOG_FORMAT = '%H%x1f%an%x1f%aI%x1f%s%x1e'

export type UpdateStatusView = z.infer<typeof UpdateStatus>
type Commit = z.infer<typeof PendingCommit>

export interface CheckoutDeps {
  readonly pool: Pick<SshPool, 'exec'>
  /** node1, where the launcher checkout lives; null when not configured. */
  readonly node1: SshTarget | null
  /** LAUNCHER_DIR. */
  readonly launcherDir: string
  readonly clock: Clock
  readonly logger: Logger
}

interface Section {
  lines: string[]
  rc: number | null
}

/**
 * The launcher checkout on node1 against its origin: one SSH round trip runs fetch, the left-right
 * count, status and log, each in its own marked section so one command's output cannot be taken
 * for another's.
 */
export class LauncherCheckout {
  constructor(private readonly deps: CheckoutDeps) {}

  /** `cd` into the checkout as a shell line (the directory quoted), failing with 127 when absent. */
  cdLine(): string {
    return `cd ${remoteDir(this.deps.launcherDir)} 2>/dev/null || { echo 'the launcher checkout (LAUNCHER_DIR) was not found on node1' >&2; exit 127; }`
  }

  get node1(): SshTarget | null {
    return this.deps.node1
  }

  async status(signal?: AbortSignal): Promise<UpdateStatusView> {
    const checkedAt = this.deps.clock.now()
    const empty: UpdateStatusView = {
      ok: false,
      ahead: 0,
      behind: 0,
      dirty: false,
      dirty_files: [],
      current: false,
      branch: null,
      pending: [],
      log: [],
      checked_at: checkedAt,
      error: null,
    }
    const target = this.deps.node1
    if (!target) return { ...empty, error: 'node1 is not configured: set NODE1_HOST and NODE1_USER' }
    const mark = `__tandem_updates_${randomBytes(6).toString('hex')}`
    let res
    try {
      res = await this.deps.pool.exec(target, statusScript(this.cdLine(), mark), {
        timeoutMs: STATUS_TIMEOUT_MS,
        signal,
      })
    } catch (err) {
      return { ...empty, error: `node1 could not be reached: ${errorText(err)}` }
    }
    if (res.code === 127) return { ...empty, error: lastLine(res.stderr) ?? 'the launcher checkout was not found' }
    const sections = parseSections(res.stdout, mark)
    return this.view(sections, checkedAt)
  }

  private view(s: Map<string, Section>, checkedAt: number): UpdateStatusView {
    const log: string[] = []
    const errors: string[] = []
    fetchOutcome(s.get('fetch'), log, errors)
    const branch = branchFrom(s.get('branch'), log)
    const counts = countsFrom(s.get('counts'), log, errors)
    const dirtyFiles = dirtyFilesFrom(s.get('status'), log)
    const pending = pendingFrom(s.get('log'), log)
    const ok = errors.length === 0
    return {
      ok,
      ahead: counts?.ahead ?? 0,
      behind: counts?.behind ?? 0,
      dirty: dirtyFiles.length > 0,
      dirty_files: dirtyFiles,
      current: counts !== null && counts.behind === 0,
      branch,
      pending,
      log,
      checked_at: checkedAt,
      error: ok ? null : errors.join('; '),
    }
  }
}

/*
 * One reader per section of the status script: each adds its command and outcome to the log shown
 * to the operator, and what went wrong to `errors`.
 */

function fetchOutcome(fetch: Section | undefined, log: string[], errors: string[]): void {
  log.push(`$ timeout ${FETCH_TIMEOUT_S} git fetch origin`)
  log.push(...(fetch?.lines ?? []).filter((l) => l.trim() !== ''))
  if (fetch?.rc !== 0) {
    const why = fetch?.rc === 124 ? `timed out after ${FETCH_TIMEOUT_S} s` : `exit status ${String(fetch?.rc)}`
    errors.push(`git fetch failed (${why}); the figures are from the last successful fetch`)
  }
}

/** The checked-out branch; null on a detached HEAD. */
function branchFrom(section: Section | undefined, log: string[]): string | null {
  const branchLine = section?.lines[0]?.trim() ?? ''
  const branch = section?.rc === 0 && branchLine !== '' && branchLine !== 'HEAD' ? branchLine : null
  log.push(`$ git rev-parse --abbrev-ref HEAD → ${branch ?? 'detached HEAD'}`)
  return branch
}

/** Commits ahead of and behind the upstream; null when they could not be counted. */
function countsFrom(
  section: Section | undefined,
  log: string[],
  errors: string[],
): { ahead: number; behind: number } | null {
  const counts = /^(\d+)\s+(\d+)$/.exec(section?.lines[0]?.trim() ?? '')
  if (!counts) {
    log.push(`$ git rev-list --left-right --count HEAD...${UPSTREAM} → failed`, ...(section?.lines ?? []))
    errors.push(`cannot compare HEAD with ${UPSTREAM}: ${section?.lines[0] ?? 'no answer'}`)
    return null
  }
  const ahead = Number(counts[1])
  const behind = Number(counts[2])
  log.push(`$ git rev-list --left-right --count HEAD...${UPSTREAM} → ahead ${ahead}, behind ${behind}`)
  return { ahead, behind }
}

function dirtyFilesFrom(section: Section | undefined, log: string[]): string[] {
  const dirtyFiles = (section?.lines ?? []).filter((l) => l.length > 3).map(porcelainPath)
  log.push(`$ git status --porcelain → ${dirtyFiles.length === 0 ? 'clean' : `${dirtyFiles.length} changed`}`)
  return dirtyFiles
}

function pendingFrom(section: Section | undefined, log: string[]): Commit[] {
  const pending = parseLog(section?.lines ?? [])
  log.push(`$ git log HEAD..${UPSTREAM} → ${pending.length} commit${pending.length === 1 ? '' : 's'}`)
  return pending
}

function statusScript(cd: string, mark: string): string {
  const section = (name: string, command: string): string =>
    [`echo ${shq(`${mark} begin ${name}`)}`, command, `echo "${mark} end ${name} $?"`].join('\n')
  return [
    cd,
    // No terminal prompt: a fetch needing credentials fails instead of waiting.
    'export GIT_TERMINAL_PROMPT=0',
    section('fetch', `timeout ${FETCH_TIMEOUT_S} git fetch --quiet origin 2>&1`),
    section('branch', 'git rev-parse --abbrev-ref HEAD 2>&1'),
    section('counts', `git rev-list --left-right --count ${shq(`HEAD...${UPSTREAM}`)} 2>&1`),
    // Every untracked file by name, not its folder: the operator is told exactly what to clean.
    section('status', 'git status --porcelain --untracked-files=all 2>/dev/null'),
    section(
      'log',
      `git log --no-color -n ${MAX_PENDING} --format=${shq(LOG_FORMAT)} ${shq(`HEAD..${UPSTREAM}`)} 2>/dev/null`,
    ),
  ].join('\n')
}

function parseSections(stdout: string, mark: string): Map<string, Section> {
  const out = new Map<string, Section>()
  let current: Section | null = null
  for (const line of stdout.split('\n')) {
    if (line.startsWith(`${mark} begin `)) {
      current = { lines: [], rc: null }
      out.set(line.slice(mark.length + 7), current)
    } else if (line.startsWith(`${mark} end `)) {
      const rc = Number(line.trim().split(' ').pop())
      if (current) current.rc = Number.isInteger(rc) ? rc : null
      current = null
    } else current?.lines.push(line)
  }
  return out
}

/** `XY path` or `XY old -> new`: the path the operator would look at. */
function porcelainPath(line: string): string {
  const rest = line.slice(3)
  const arrow = rest.indexOf(' -> ')
  return arrow >= 0 ? rest.slice(arrow + 4) : rest
}

function parseLog(lines: string[]): Commit[] {
  return lines
    .join('\n')
    .split('\x1e')
    .map((r) => r.replace(/^\n+/, ''))
    .filter((r) => r !== '')
    .flatMap((r) => {
      const [sha, author, date, ...subject] = r.split('\x1f')
      if (!sha || author === undefined || date === undefined) return []
      return [{ sha, author, date, subject: subject.join('\x1f') }]
    })
}

function lastLine(text: string): string | null {
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  return lines[lines.length - 1]?.slice(0, 500) ?? null
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
