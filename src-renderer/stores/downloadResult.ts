import type { JobRecord } from '../../src-main/contract/system'

/** A finished download as its result card shows it. */
export interface DownloadOutcome {
  id: string
  state: 'succeeded' | 'failed' | 'cancelled'
  repo: string | null
  nodes: string[]
  bytes: number | null
  duration_s: number | null
  /** Average bytes per second over the whole job. */
  rate: number | null
  error: string | null
}

function resultField(result: unknown, field: 'repo' | 'nodes'): unknown {
  return typeof result === 'object' && result !== null ? (result as Record<string, unknown>)[field] : undefined
}

/** The repo a download job was for: its result names it; a failed one only its title ("Download org/x to node1"). */
export function downloadRepoOf(job: JobRecord): string | null {
  const repo = resultField(job.result, 'repo')
  if (typeof repo === 'string') return repo
  return /^Download (\S+) to /.exec(job.title)?.[1] ?? null
}

/** The result card of a finished download job; null while it runs. */
export function downloadOutcome(job: JobRecord): DownloadOutcome | null {
  if (job.state === 'running') return null
  const nodes = resultField(job.result, 'nodes')
  const bytes = job.progress?.bytes_total ?? job.progress?.bytes_done ?? null
  const duration = job.finished_at === null ? null : Math.max(0, (job.finished_at - job.started_at) / 1000)
  return {
    id: job.id,
    state: job.state,
    repo: downloadRepoOf(job),
    nodes: Array.isArray(nodes) ? nodes.filter((n): n is string => typeof n === 'string') : [],
    bytes,
    duration_s: duration,
    rate: bytes !== null && duration !== null && duration > 0 ? bytes / duration : null,
    error: job.error,
  }
}

/** Whether the catalog already has an entry for `repo` (hub repo names are case-insensitive). */
export function repoInCatalog(models: readonly { repo?: string | null }[], repo: string): boolean {
  const want = repo.toLowerCase()
  return models.some((m) => m.repo?.toLowerCase() === want)
}

/** Where the dismissed result cards are remembered, so a reload does not bring one back. */
const DISMISSED_KEY = 'tandem-dismissed-download'

export function dismissedDownload(): string | null {
  try {
    return localStorage.getItem(DISMISSED_KEY)
  } catch {
    return null
  }
}

export function rememberDismissed(id: string): void {
  try {
    localStorage.setItem(DISMISSED_KEY, id)
  } catch {
    // Private windows may refuse storage: the card then returns on the next reload only.
  }
}
