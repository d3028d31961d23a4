import type { JobProgress } from '../contract/system'

/**
 * Progress of the launcher's download script (spec 3.4, 4.3 rule 1), read line by line from its
 * output: the hub CLI's tqdm bars while downloading, then rsync `--progress` lines while copying to
 * the peer nodes. Lines arrive already split on `\r` and `\n` (ssh/lines.ts), so every redraw of a
 * bar is one line. The formats are the recorded ones in test/fixtures/downloads (see its README).
 */

export const DownloadPhase = {
  connecting: 'Connecting',
  fetching: (files: number) => `Fetching ${files} files`,
  downloading: 'Downloading',
  copying: 'Copying to peer nodes',
  done: 'Done',
} as const

/** A progress figure with the elapsed time the tool itself reports (the job record has its own). */
export type DownloadFigures = JobProgress & { elapsed_s: number | null }

export interface FeedResult {
  /** The phase changed with this line (read `phase`). */
  phase: boolean
  /** The figures changed with this line (read `figures()`). */
  progress: boolean
  /** Lines for the job log: text, the line that changed the phase, each bar once at its end. */
  log: readonly string[]
}

const UNCHANGED: FeedResult = Object.freeze({ phase: false, progress: false, log: Object.freeze([]) })
// CSI sequences: tqdm moves the cursor between stacked bars (`ESC[A`) when several bars are shown.
// eslint-disable-next-line no-control-regex -- ESC is exactly what this strips
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g
const SIZE = '([\\d.]+[kMGTPEZY]?)'
/** tqdm's default meter: `desc: 42%|bar| n/total [elapsed<remaining, rate]` (per-file and aggregated bars). */
const TQDM = new RegExp(
  `^(.*?):\\s*(\\d{1,3})%\\|[^|]*\\|\\s*${SIZE}\\/${SIZE}\\s+\\[([\\d:]+)<([\\d:]+|\\?),\\s*([^\\]]*?)\\s*\\]\\s*$`,
)
/** Xet bytes written: `{l_bar}{bar}| {n_fmt:>5}B / {total_fmt:>5}B{postfix:>12}`; no percent while the total is 0. */
const XET_WRITTEN = new RegExp(
  `^(.*?):\\s*(?:(\\d{1,3})%)?\\|[^|]*\\|\\s*${SIZE}B \\/\\s*${SIZE}B(?:,\\s*(\\S+))?\\s*$`,
)
/** Xet bytes received: `{desc}: {bar}| {n_fmt:>5}B{postfix:>12}`, no total shown. */
const XET_RECEIVED = new RegExp(`^(.*?):\\s[^|]*\\|\\s*${SIZE}B(?:,\\s*(\\S+))?\\s*$`)
/** A tqdm bar without a known total: `desc: 1.85GB [00:10, 185MB/s]`. */
const TQDM_OPEN = /^(.*?):\s*[\d.]+[kMGTPEZY]?(?:B|it)\s+\[[\d:]+,\s*[^\]]*\]\s*$/
/** rsync --progress: `  125,698,048  39%   58.62MB/s    0:00:03 (xfr#2, to-chk=1/7)`. */
const RSYNC =
  /^\s*([\d,]+)\s+(\d{1,3})%\s+([\d.]+)([kMGT]?)B\/s\s+(\d+):(\d\d):(\d\d)(?:\s+\(xfr#\d+,\s*(?:ir|to)-chk=(\d+)\/(\d+)\))?\s*$/
const FETCHING = /^Fetching (\d+) files?$/
/** The launcher announces its copy step before rsync prints anything. */
const COPY_START = /^(Copying model\b|sending incremental file list$)/
/** Older hubs draw one bar for all files and rename it when the snapshot is done: one bar, two names. */
const AGGREGATE_NAMES = new Set(['Downloading (incomplete total...)', 'Download complete'])
/** While the hub still registers files the total is marked incomplete: 100 % of it is not the end. */
const INCOMPLETE = /\(incomplete total\.\.\.\)/
/** snapshot_download's name for the Xet transfer bar once every file is in. */
const TRANSFER_DONE = 'Download complete'

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

/** A redraw of a hub CLI bar or an rsync progress line (ANSI already stripped): not worth quoting in an error. */
export function isProgressLine(line: string): boolean {
  return readBar(line) !== null || TQDM_OPEN.test(line) || RSYNC.test(line)
}

/** Which bar a redraw belongs to: the file count, a legacy per-file or aggregated bar, or a Xet bar. */
type BarKind = 'fetch' | 'file' | 'aggregate' | 'written' | 'received'

/** One redraw of a bar, read. */
interface BarLine {
  kind: BarKind
  /** Stable across redraws and renames: the log keeps the last redraw per key. */
  key: string
  done: number
  total: number | null
  rate: number | null
  elapsed: number | null
  finished: boolean
}

interface ByteBar {
  done: number
  total: number | null
  rate: number | null
  finished: boolean
}

/** A redraw of any of the hub CLI's bars, or null. */
export function readBar(line: string): BarLine | null {
  const m = TQDM.exec(line)
  if (m) return meterBar(m)
  const w = XET_WRITTEN.exec(line)
  if (w) return writtenBar(w)
  const r = XET_RECEIVED.exec(line)
  return r ? receivedBar(r) : null
}

/** The Xet bytes-written bar: ends when renamed, not at 100 % of a total still marked incomplete. */
function writtenBar(w: RegExpExecArray): BarLine | null {
  const done = parseSize(w[3] as string)
  if (done === null) return null
  const total = parseSize(w[4] as string) || null
  const full = Number(w[2]) === 100 || (total !== null && done >= total)
  const rate = w[5] === undefined ? null : parseRate(w[5])
  const finished = full && !INCOMPLETE.test(w[1] as string)
  return { kind: 'written', key: 'written', done, total, rate, elapsed: null, finished }
}

/** The Xet bytes-received bar: no total; ends when snapshot_download renames it. */
function receivedBar(r: RegExpExecArray): BarLine | null {
  const done = parseSize(r[2] as string)
  if (done === null) return null
  const rate = r[3] === undefined ? null : parseRate(r[3])
  const finished = (r[1] as string).trim() === TRANSFER_DONE
  return { kind: 'received', key: 'received', done, total: null, rate, elapsed: null, finished }
}

function meterBar(m: RegExpExecArray): BarLine | null {
  const desc = (m[1] as string).trim()
  const done = parseSize(m[3] as string)
  const total = parseSize(m[4] as string)
  if (done === null || total === null) return null
  const elapsed = parseClock(m[5] as string)
  const rate = parseRate(((m[7] as string).split(',')[0] as string).trim())
  const full = Number(m[2]) >= 100 || done >= total
  if (FETCHING.test(desc))
    return { kind: 'fetch', key: 'fetch', done, total, rate: null, elapsed, finished: done >= total }
  const kind = AGGREGATE_NAMES.has(desc) ? 'aggregate' : 'file'
  const key = kind === 'file' ? `file:${desc}` : kind
  return { kind, key, done, total: total || null, rate, elapsed, finished: full && !INCOMPLETE.test(desc) }
}

/**
 * Reads the script's output and keeps the phase and the current phase's figures. Download figures
 * come from the Xet bytes-written bar when there is one, else the older aggregated bar, else the sum of
 * per-file bars; copy figures count the files rsync finished plus the one in flight, against the bytes
 * downloaded times the peers copied to. The log gets text, phase changes and each bar's end; other redraws wait in `pending`
 * and only the last one per bar is kept (see flush).
 */
export class DownloadProgress {
  phase: string = DownloadPhase.connecting
  private readonly now: () => number
  /** How many peers the copy phase copies to: each copy moves the downloaded bytes once. */
  private readonly copies: number
  private phaseSince: number
  private fileCount: number | null = null
  private filesFetched = 0
  private elapsed: number | null = null
  private readonly perFile = new Map<string, ByteBar>()
  private readonly bars = new Map<string, ByteBar>()
  private lastFileRate: number | null = null
  private downloadedBytes: number | null = null
  /** The phase's first byte reading: what was on disk already when a resumed download started. */
  private firstReading: { done: number; elapsed: number | null; at: number } | null = null
  private copy = freshCopy()
  private copyElapsed = 0
  private current: DownloadFigures = blank()
  private readonly pending = new Map<string, string>()
  private readonly ended = new Set<string>()

  constructor(opts: { now?: () => number; copies?: number } = {}) {
    this.now = opts.now ?? Date.now
    this.copies = Math.max(1, Math.floor(opts.copies ?? 1))
    this.phaseSince = this.now()
  }

  figures(): DownloadFigures {
    return { ...this.current }
  }

  feed(raw: string): FeedResult {
    const line = stripAnsi(raw).trimEnd()
    if (line.trim() === '') return UNCHANGED
    const bar = readBar(line)
    if (bar) return this.onBar(line, bar)
    // Nothing to count against, but it is a redraw, not text for the log.
    if (TQDM_OPEN.test(line)) return UNCHANGED
    const rsync = RSYNC.exec(line)
    if (rsync) return this.onRsync(line, rsync)
    if (COPY_START.test(line.trim())) {
      const r = this.startCopy()
      return { ...r, log: [...r.log, ...this.flush(), line] }
    }
    return { phase: false, progress: false, log: [...this.flush(), line] }
  }

  /** The last redraw of each bar that has not ended yet (the job ended, or text interrupts the bars). */
  flush(): string[] {
    const lines = [...this.pending.values()]
    this.pending.clear()
    return lines
  }

  /** The copy step begins (Tandem runs rsync itself, or the script announced it). */
  startCopy(): FeedResult {
    if (this.phase === DownloadPhase.copying) return UNCHANGED
    // The download bars' last redraws belong before the copy in the log.
    const log = this.flush()
    this.setPhase(DownloadPhase.copying)
    this.copy = freshCopy()
    this.copyElapsed = 0
    this.copyFigures()
    return { phase: true, progress: true, log }
  }

  /**
   * The script exited 0: the last phase is complete; the rate becomes the phase's average over the
   * bytes that crossed the network: the Xet transfer bar's own count, else the bytes added since the
   * phase's first reading (a resumed download starts with part of it on disk), over the time between.
   */
  finish(): void {
    const f = this.current
    const { moved, secs } = this.transferred(f)
    const rate = moved !== null && moved > 0 && secs > 0 ? Math.round(moved / secs) : f.rate
    this.setPhase(DownloadPhase.done)
    this.current = { ...f, percent: 100, bytes_done: f.bytes_total ?? f.bytes_done, rate, eta_s: 0 }
  }

  private transferred(f: DownloadFigures): { moved: number | null; secs: number } {
    const toolSecs = f.elapsed_s !== null && f.elapsed_s > 0 ? f.elapsed_s : null
    const wall = (this.now() - this.phaseSince) / 1000
    const received = this.phase === DownloadPhase.copying ? undefined : this.bars.get('received')
    if (received !== undefined && received.done > 0) return { moved: received.done, secs: toolSecs ?? wall }
    const end = f.bytes_done ?? f.bytes_total
    const first = this.firstReading
    if (end === null || first === null) return { moved: end, secs: toolSecs ?? wall }
    const secs = toolSecs !== null ? toolSecs - (first.elapsed ?? 0) : (this.now() - first.at) / 1000
    return { moved: end - first.done, secs }
  }

  private setPhase(name: string): boolean {
    if (this.phase === name) return false
    this.phase = name
    this.phaseSince = this.now()
    this.firstReading = null
    return true
  }

  private onBar(line: string, bar: BarLine): FeedResult {
    if (this.phase === DownloadPhase.copying) return UNCHANGED
    const repeat = this.ended.has(bar.key)
    this.store(bar)
    const phase = this.phaseFor(bar)
    const progress = this.recompute()
    if (repeat) return { phase, progress, log: [] }
    if (bar.finished || phase) {
      if (bar.finished) this.ended.add(bar.key)
      this.pending.delete(bar.key)
      return { phase, progress, log: [line] }
    }
    this.pending.set(bar.key, line)
    return { phase, progress, log: [] }
  }

  private store(bar: BarLine): void {
    if (bar.elapsed !== null) this.elapsed = Math.max(this.elapsed ?? 0, bar.elapsed)
    if (bar.kind === 'fetch') {
      this.fileCount = bar.total
      this.filesFetched = bar.done
      return
    }
    const map = bar.kind === 'file' ? this.perFile : this.bars
    const before = map.get(bar.key)
    // A redraw without a speed has not measured one yet: keep the last.
    map.set(bar.key, {
      done: bar.done,
      total: bar.total,
      rate: bar.rate ?? before?.rate ?? null,
      finished: bar.finished,
    })
  }

  private phaseFor(bar: BarLine): boolean {
    if (bar.kind === 'fetch') {
      const early = this.phase === DownloadPhase.connecting || this.phase.startsWith('Fetching ')
      return early && bar.total !== null ? this.setPhase(DownloadPhase.fetching(bar.total)) : false
    }
    // Bars drawn before any file registered (0 of 0 bytes) are not downloading yet.
    return bar.total !== null || bar.done > 0 ? this.setPhase(DownloadPhase.downloading) : false
  }

  /** The bar the download's figures come from (see the class comment). */
  private byteSource(): ByteBar | null {
    const written = this.bars.get('written')
    const received = this.bars.get('received')
    if (written && (written.total !== null || written.done > 0))
      return { ...written, rate: written.rate ?? received?.rate ?? null }
    const aggregate = this.bars.get('aggregate')
    if (aggregate) return aggregate
    if (this.perFile.size > 0) return this.sumFiles()
    if (received && received.done > 0) return { ...received, total: null }
    return null
  }

  private sumFiles(): ByteBar {
    const bars = [...this.perFile.values()]
    const active = bars.filter((b) => !b.finished)
    const rate = active.reduce((s, b) => s + (b.rate ?? 0), 0)
    if (rate > 0) this.lastFileRate = rate
    return {
      done: bars.reduce((s, b) => s + b.done, 0),
      total: bars.reduce((s, b) => s + (b.total ?? 0), 0) || null,
      rate: active.length > 0 && rate > 0 ? rate : this.lastFileRate,
      finished: active.length === 0,
    }
  }

  private recompute(): boolean {
    const before = this.current
    const src = this.byteSource()
    if (src === null) {
      const n = this.fileCount
      this.current = { ...blank(), percent: n ? round1((100 * this.filesFetched) / n) : null, elapsed_s: this.elapsed }
    } else {
      if (src.total !== null) this.downloadedBytes = Math.round(src.total)
      this.firstReading ??= { done: src.done, elapsed: this.elapsed, at: this.now() }
      this.current = {
        percent: src.total ? round1(Math.min(100, (100 * src.done) / src.total)) : null,
        bytes_done: Math.round(src.done),
        bytes_total: src.total === null ? null : Math.round(src.total),
        rate: src.rate === null ? null : Math.round(src.rate),
        eta_s: etaOf(src.done, src.total, src.rate),
        elapsed_s: this.elapsed,
      }
    }
    return !sameFigures(before, this.current)
  }

  private onRsync(line: string, m: RegExpExecArray): FeedResult {
    const entered = this.phase === DownloadPhase.copying ? UNCHANGED : this.startCopy()
    const bytes = Number((m[1] as string).replace(/,/g, ''))
    const pct = Number(m[2])
    const rate = Number(m[3]) * (BINARY[m[4] as string] ?? 1)
    const secs = Number(m[5]) * 3600 + Number(m[6]) * 60 + Number(m[7])
    const last = m[8] !== undefined
    if (last) {
      // A file's last line: its bytes are done, the time is how long it took, to-chk counts what is left.
      this.copy.finished += bytes
      this.copy.current = 0
      this.copy.left = Number(m[8])
      this.copy.count = Number(m[9])
      this.copyElapsed += secs
      this.copy.eta = null
      this.pending.delete('rsync')
    } else {
      this.copy.current = pct === 0 ? 0 : bytes
      this.copy.eta = secs
      this.pending.set('rsync', line)
    }
    this.copy.rate = rate > 0 ? rate : this.copy.rate
    this.copyFigures()
    return { phase: entered.phase, progress: true, log: last ? [...entered.log, line] : entered.log }
  }

  private copyFigures(): void {
    const done = this.copy.finished + this.copy.current
    // The cache copied holds a little more than the weights the bars counted (refs, small files).
    const total = this.downloadedBytes === null ? null : Math.max(this.downloadedBytes * this.copies, done)
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

function freshCopy(): {
  finished: number
  current: number
  rate: number | null
  eta: number | null
  left: number | null
  count: number | null
} {
  return { finished: 0, current: 0, rate: null, eta: null, left: null, count: null }
}

function etaOf(done: number, total: number | null, rate: number | null): number | null {
  if (total === null) return null
  if (done >= total) return 0
  return rate ? Math.max(0, Math.round((total - done) / rate)) : null
}

function sameFigures(a: DownloadFigures, b: DownloadFigures): boolean {
  return (
    a.percent === b.percent &&
    a.bytes_done === b.bytes_done &&
    a.bytes_total === b.bytes_total &&
    a.rate === b.rate &&
    a.eta_s === b.eta_s &&
    a.elapsed_s === b.elapsed_s
  )
}

function blank(): DownloadFigures {
  return { percent: null, bytes_done: null, bytes_total: null, rate: null, eta_s: null, elapsed_s: null }
}

function round1(n: number): number {
  return Math.round(n * 10) / 10
}
