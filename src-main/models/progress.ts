import type { JobProgress } from '../contract/system'

/**
 * Progress of the launcher's download script (spec 3.4, 4.3 rule 1), read line by line from its
 * output: the hub CLI's tqdm bars while downloading, then rsync `--progress` lines while copying to
 * the peer nodes. Lines arrive already split on `\r` and `\n` (ssh/lines.ts), so every redraw of a
 * bar is one line.
 */

export const DownloadPhase = {
  connecting: 'Connecting',
  fetching: (files: number) => `Fetching ${files} files`,
  downloading: 'Downloading',
  copying: 'Copying to peer nodes',
  done: 'Done',
} as const

/** A progress figure with the elapsed time the bar itself reports (the job record has its own). */
export type DownloadFigures = JobProgress & { elapsed_s: number | null }

export interface FeedResult {
  /** The phase changed with this line (read `phase`). */
  phase: boolean
  /** The figures changed with this line (read `figures()`). */
  progress: boolean
  /** Worth keeping in the job log: text, and each bar once, when it completes (not every redraw). */
  log: boolean
}

const UNCHANGED: FeedResult = { phase: false, progress: false, log: false }
const TEXT: FeedResult = { phase: false, progress: false, log: true }
// CSI sequences: tqdm moves the cursor between stacked bars when several files download at once.
// eslint-disable-next-line no-control-regex -- ESC is exactly what this strips
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g
/** tqdm's format_meter: `desc: 42%|bar| n/total [elapsed<remaining, rate]`. */
const TQDM =
  /^(.*?):\s*(\d{1,3})%\|[^|]*\|\s*([\d.]+[kMGTPEZY]?)\/([\d.]+[kMGTPEZY]?)\s+\[([\d:]+)<([\d:]+|\?),\s*([^\]]*?)\s*\]\s*$/
/** A tqdm bar without a known total: `desc: 1.85GB [00:10, 185MB/s]`. */
const TQDM_OPEN = /^(.*?):\s*[\d.]+[kMGTPEZY]?(?:B|it)\s+\[[\d:]+,\s*[^\]]*\]\s*$/
/** rsync --progress: `  125,698,048  39%   58.62MB/s    0:00:03 (xfr#2, to-chk=1/7)`. */
const RSYNC =
  /^\s*([\d,]+)\s+(\d{1,3})%\s+([\d.]+)([kMGT]?)B\/s\s+(\d+):(\d\d):(\d\d)(?:\s+\(xfr#\d+,\s*(?:ir|to)-chk=(\d+)\/(\d+)\))?\s*$/
const FETCHING = /^Fetching (\d+) files?$/
/** The launcher announces its copy step before rsync prints anything. */
const COPY_START = /^(Copying model\b|sending incremental file list$)/

const SI: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Z: 1e21, Y: 1e24 }
// rsync's human-readable rate uses powers of 1024 (kB/s, MB/s, GB/s).
const BINARY: Record<string, number> = { '': 1, k: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 }

/** The line without terminal control sequences. */
export function stripAnsi(line: string): string {
  return line.replace(ANSI, '')
}

/** tqdm's format_sizeof: `1.85G` → 1.85e9 (tqdm's default divisor is 1000). */
export function parseSize(text: string): number | null {
  const m = /^([\d.]+)([kMGTPEZY]?)$/.exec(text)
  if (!m) return null
  const n = Number(m[1])
  return Number.isFinite(n) ? n * (SI[m[2] as string] ?? 1) : null
}

/** tqdm's clock: `MM:SS` or `H:MM:SS`; `?` is unknown. */
export function parseClock(text: string): number | null {
  if (!/^\d+(:\d{1,2}){1,2}$/.test(text)) return null
  return text.split(':').reduce((acc, part) => acc * 60 + Number(part), 0)
}

/** tqdm's rate in bytes (or items) per second: `185MB/s`, `1.20it/s`, `2.50s/it`; `?B/s` is unknown. */
export function parseRate(text: string): number | null {
  const inverse = /^([\d.]+)([kMGTPEZY]?)s\/\w+$/.exec(text)
  if (inverse) {
    const secs = Number(inverse[1]) * (SI[inverse[2] as string] ?? 1)
    return secs > 0 ? 1 / secs : null
  }
  const m = /^([\d.]+)([kMGTPEZY]?)\w*\/s$/.exec(text)
  return m ? Number(m[1]) * (SI[m[2] as string] ?? 1) : null
}

interface FileBar {
  done: number
  total: number
  rate: number | null
  finished: boolean
}

/**
 * Reads the script's output and keeps the phase and the current phase's figures. Download figures
 * sum the per-file byte bars (the hub CLI downloads several files at once); copy figures count the
 * files rsync finished plus the one in flight, against the bytes downloaded.
 */
export class DownloadProgress {
  phase: string = DownloadPhase.connecting
  private files = new Map<string, FileBar>()
  private fileCount: number | null = null
  private filesFetched = 0
  private fetchElapsed: number | null = null
  private downloadedBytes: number | null = null
  private copy = {
    finished: 0,
    current: 0,
    rate: null as number | null,
    eta: null as number | null,
    left: null as number | null,
    count: null as number | null,
  }
  private copyElapsed = 0
  private current: DownloadFigures = blank()

  figures(): DownloadFigures {
    return { ...this.current }
  }

  feed(raw: string): FeedResult {
    const line = stripAnsi(raw).trimEnd()
    if (line.trim() === '') return UNCHANGED
    const bar = TQDM.exec(line)
    if (bar) return this.onBar(bar)
    // Nothing to count against, but it is a redraw, not text for the log.
    if (TQDM_OPEN.test(line)) return UNCHANGED
    const rsync = RSYNC.exec(line)
    if (rsync) return this.onRsync(rsync)
    if (COPY_START.test(line.trim())) return { ...this.enterCopy(), log: true }
    return TEXT
  }

  /** The script exited 0: the last phase is complete. */
  finish(): void {
    this.phase = DownloadPhase.done
    this.current = { ...this.current, percent: 100, eta_s: 0 }
  }

  private setPhase(name: string): boolean {
    if (this.phase === name) return false
    this.phase = name
    return true
  }

  private onBar(m: RegExpExecArray): FeedResult {
    const desc = (m[1] as string).trim()
    const fetching = FETCHING.exec(desc)
    const elapsed = parseClock(m[5] as string)
    if (this.phase === DownloadPhase.copying) return UNCHANGED
    if (fetching) {
      this.fileCount = Number(fetching[1])
      this.filesFetched = Number(m[3])
      this.fetchElapsed = elapsed
      const phase = this.files.size === 0 ? this.setPhase(DownloadPhase.fetching(this.fileCount)) : false
      return { phase, progress: this.recompute(), log: this.filesFetched >= this.fileCount }
    }
    const done = parseSize(m[3] as string)
    const total = parseSize(m[4] as string)
    if (done === null || total === null) return UNCHANGED
    const finished = Number(m[2]) >= 100 || done >= total
    const wasFinished = this.files.get(desc)?.finished === true
    this.files.set(desc, { done, total, rate: parseRate(m[7] as string), finished })
    this.fetchElapsed = Math.max(this.fetchElapsed ?? 0, elapsed ?? 0)
    const phase = this.setPhase(DownloadPhase.downloading)
    return { phase, progress: this.recompute(), log: finished && !wasFinished }
  }

  private recompute(): boolean {
    const before = JSON.stringify(this.current)
    const bars = [...this.files.values()]
    if (bars.length === 0) {
      const n = this.fileCount
      this.current = {
        ...blank(),
        percent: n ? round1((100 * this.filesFetched) / n) : null,
        elapsed_s: this.fetchElapsed,
      }
    } else {
      const done = bars.reduce((s, b) => s + b.done, 0)
      const total = bars.reduce((s, b) => s + b.total, 0)
      const active = bars.filter((b) => !b.finished)
      const rate = active.length === 0 ? null : active.reduce((s, b) => s + (b.rate ?? 0), 0) || null
      this.downloadedBytes = Math.round(total)
      this.current = {
        percent: total > 0 ? round1((100 * done) / total) : null,
        bytes_done: Math.round(done),
        bytes_total: Math.round(total),
        rate: rate === null ? null : Math.round(rate),
        eta_s: rate ? Math.round((total - done) / rate) : active.length === 0 ? 0 : null,
        elapsed_s: this.fetchElapsed,
      }
    }
    return JSON.stringify(this.current) !== before
  }

  private enterCopy(): FeedResult {
    if (this.phase === DownloadPhase.copying) return UNCHANGED
    this.phase = DownloadPhase.copying
    this.copy = { finished: 0, current: 0, rate: null, eta: null, left: null, count: null }
    this.copyElapsed = 0
    this.copyFigures()
    return { phase: true, progress: true, log: false }
  }

  private onRsync(m: RegExpExecArray): FeedResult {
    const phase = this.phase !== DownloadPhase.copying ? this.enterCopy().phase : false
    const bytes = Number((m[1] as string).replace(/,/g, ''))
    const pct = Number(m[2])
    const rate = Number(m[3]) * (BINARY[m[4] as string] ?? 1)
    const secs = Number(m[5]) * 3600 + Number(m[6]) * 60 + Number(m[7])
    if (m[8] !== undefined) {
      // A file's last line: its bytes are done, the time is how long it took, to-chk counts what is left.
      this.copy.finished += bytes
      this.copy.current = 0
      this.copy.left = Number(m[8])
      this.copy.count = Number(m[9])
      this.copyElapsed += secs
      this.copy.eta = null
    } else {
      this.copy.current = pct === 0 ? 0 : bytes
      this.copy.eta = secs
    }
    this.copy.rate = rate > 0 ? rate : null
    this.copyFigures()
    return { phase, progress: true, log: m[8] !== undefined }
  }

  private copyFigures(): void {
    const done = this.copy.finished + this.copy.current
    // The cache copied holds a little more than the weights the bars counted (refs, small files).
    const total = this.downloadedBytes === null ? null : Math.max(this.downloadedBytes, done)
    const { left, count, rate } = this.copy
    let percent: number | null = null
    if (total && total > 0) percent = round1(Math.min(100, (100 * done) / total))
    else if (left !== null && count) percent = round1((100 * (count - left)) / count)
    const eta = total && rate ? Math.max(0, Math.round((total - done) / rate)) : this.copy.eta
    this.current = {
      percent,
      bytes_done: done,
      bytes_total: total ?? null,
      rate: rate === null ? null : Math.round(rate),
      eta_s: eta,
      elapsed_s: this.copyElapsed,
    }
  }
}

function blank(): DownloadFigures {
  return { percent: null, bytes_done: null, bytes_total: null, rate: null, eta_s: null, elapsed_s: null }
}

function round1(n: number): number {
  return Math.round(n * 10) / 10
}
