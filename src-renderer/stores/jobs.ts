import { reactive } from 'vue'
import type { JobEvent, JobProgress } from '../../src-main/contract/system'
import { useApi } from '../api'

/** The lines of a job's log kept on screen. */
const LOG_TAIL = 200

/** A job followed through its own stream: phase, progress, log tail and how it ended. */
export interface FollowedJob {
  id: string
  phase: string
  /** Every phase it has been in, in order (the stream replays them): a failure names the step it ended. */
  phases: string[]
  state: 'running' | 'succeeded' | 'failed' | 'cancelled'
  progress: JobProgress | null
  log: string[]
  error: string | null
  started_at: number
}

export function newJob(id: string, phase: string): FollowedJob {
  return { id, phase, phases: [], state: 'running', progress: null, log: [], error: null, started_at: Date.now() }
}

/** Applies one job stream event; the log keeps its tail only. */
export function applyJobEvent(job: FollowedJob, ev: JobEvent): void {
  switch (ev.type) {
    case 'phase':
      job.phase = ev.phase
      if (job.phases.at(-1) !== ev.phase) job.phases.push(ev.phase)
      break
    case 'log':
      job.log.push(ev.line)
      if (job.log.length > LOG_TAIL) job.log.splice(0, job.log.length - LOG_TAIL)
      break
    case 'progress':
      job.progress = ev.progress
      break
    case 'end':
      job.state = ev.state
      job.error = ev.error
      break
  }
}

/** The job streams a view can follow: each carries one job's phases, log and progress. */
export type JobStreamMethod = 'streamJob' | 'streamDownload' | 'streamPrebuiltInstall'

/**
 * Follows one job through its stream into a reactive record; `what` names it when the stream stops
 * while the job still runs, and `onEvent` sees each event after it is applied.
 */
export function followJob(
  method: JobStreamMethod,
  id: string,
  phase: string,
  what: string,
  onEvent?: (ev: JobEvent) => void,
): { job: FollowedJob; stop: () => void } {
  const job = reactive(newJob(id, phase)) as FollowedJob
  const stop = useApi().subscribe(
    method,
    { id },
    {
      onEvent: (ev) => {
        applyJobEvent(job, ev)
        onEvent?.(ev)
      },
      onError: (err) => {
        if (job.state === 'running') job.error ??= `the ${what}'s log stopped: ${err.message}`
      },
    },
  )
  return { job, stop }
}
