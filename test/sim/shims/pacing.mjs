// The simulated network's speed for the download shims: with the knob download_mbps (MB/s, 10^6
// bytes; environment SIM_DOWNLOAD_MBPS) a download takes the time its bytes take at that rate, prints
// that rate, and redraws its bars about once a second as the real tools do, every line in the
// recorded format (recordings.mjs). Without the knob the shims keep their fixed, fast replay.
import { declaredTotal, knob, parseSi, redrawXetTail, rescaleFrame, xetFrames } from './recordings.mjs'

/** The paced rate in bytes/s, or null for the fixed replay (knob unset, 0 or not a number). */
export function pacedRate() {
  const mbps = Number(knob('SIM_DOWNLOAD_MBPS', 'download_mbps', ''))
  return Number.isFinite(mbps) && mbps > 0 ? mbps * 1e6 : null
}

// tqdm's Bar with the UTF charset: full blocks, then one partial block of eighths.
const BLOCKS = ' ▏▎▍▌▋▊▉█'

/** tqdm's bar of `width` cells for the share `frac` (Bar.__format__). */
export function tqdmBar(frac, width) {
  const nsyms = BLOCKS.length - 1
  const cells = Math.floor(Math.min(1, Math.max(0, frac)) * width * nsyms)
  const full = Math.floor(cells / nsyms)
  if (full >= width) return BLOCKS[nsyms].repeat(width)
  return BLOCKS[nsyms].repeat(full) + BLOCKS[cells % nsyms] + ' '.repeat(width - full - 1)
}

/** tqdm's format_interval: `MM:SS`, or `H:MM:SS` from an hour. */
export function tqdmClock(secs) {
  // A paced time is a sum of floats: 324.99999… is 325 s.
  const t = Math.floor(secs + 1e-6)
  const [h, m, s] = [Math.floor(t / 3600), Math.floor(t / 60) % 60, t % 60]
  const two = (v) => String(v).padStart(2, '0')
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`
}

// An in-progress Xet bar: description, percent (bytes-written bar only), bar cells, tail, cursor moves.
const XET_BAR =
  // eslint-disable-next-line no-control-regex -- tqdm's cursor-up is part of the recorded frame
  /^\r(Downloading bytes|Reconstructing \(incomplete total\.\.\.\)): (?:( *\d+)%\|)?([^|]*)\| (.*?)((?:\x1b\[A|\n)*)$/s

/** A recorded in-progress Xet redraw drawn again for `n` of `total` bytes at `rate` bytes/s. */
export function drawXetBar(frame, n, total, rate) {
  const m = XET_BAR.exec(frame)
  if (!m) return frame
  const pct = m[2] === undefined ? '' : `${String(Math.round((100 * n) / total)).padStart(3)}%|`
  const tail = redrawXetTail(m[4], () => ({ n, total, rate }))
  if (tail === null) return frame
  return `\r${m[1]}: ${pct}${tqdmBar(n / total, m[3].length)}| ${tail}${m[5]}`
}

/** The bytes a Xet redraw shows (received or written), or null for another line. */
function shownBytes(frame) {
  const m = XET_BAR.exec(frame)
  return m ? parseSi(/^ *([\d.]+[kMGTPEZY]?)B/.exec(m[4])?.[1] ?? '') : null
}

/** The recording's first full redraw cycle with speeds (both bars twice): drawn again between recorded steps. */
function redrawCycle(frames) {
  const mid = (f) => XET_BAR.test(f.frame) && / +[\d.]+[kMGTPEZY]?B\/s {2}/.test(f.frame)
  const starts = (k) => frames[k].frame.startsWith('\rDownloading bytes')
  const i = frames.findIndex(
    (_, k) => starts(k) && frames.slice(k, k + 4).length === 4 && frames.slice(k, k + 4).every(mid),
  )
  return i < 0 ? [] : frames.slice(i, i + 4).map((f) => f.frame)
}

/** The file-count bar's end redrawn with the paced clock: `[elapsed<00:00, rate]`, tqdm's s/it past a second. */
function fetchClock(frame, secs) {
  const m = /^(\rFetching (\d+) files?: 100%\|[^|]*\| \d+\/\d+ )\[[\d:]+<00:00, [^\]]*\](.*)$/s.exec(frame)
  if (!m) return frame
  const files = Number(m[2])
  const perFile = secs / files
  const rate = perFile > 1 ? `${perFile.toFixed(2).padStart(5)}s/it` : `${(files / secs).toFixed(2).padStart(5)}it/s`
  return `${m[1]}[${tqdmClock(secs)}<00:00, ${rate}]${m[3]}`
}

/**
 * The Xet recording for a model of `total` bytes at `rate` bytes/s: each recorded redraw (sizes
 * scaled, speed the rate) at the time its bytes take, and between two recorded steps the recorded
 * redraw cycle drawn again every `interval` seconds for the bytes reached by then. Answers
 * [{ text, at, written }]: `at` seconds from the start, `written` the bytes on disk (or null).
 */
export function xetPaced(recording, { total, rate, interval = 1 }) {
  const frames = xetFrames(recording)
  const scale = total / declaredTotal(recording)
  const cycle = redrawCycle(frames)
  const out = []
  let reached = 0
  for (const { frame, written } of frames) {
    const shown = shownBytes(frame)
    if (shown !== null && shown * scale > reached) {
      const to = shown * scale
      const steps = Math.ceil((to - reached) / rate / interval)
      for (let j = 1; j < steps; j++) {
        const b = reached + ((to - reached) * j) / steps
        for (const c of cycle) out.push({ text: drawXetBar(c, b, total, rate), at: b / rate, written: b })
      }
      reached = to
    }
    const at = reached / rate
    const text = /^\rFetching /.test(frame) ? fetchClock(frame, at) : rescaleFrame(frame, scale, rate)
    out.push({ text, at, written: written === null ? null : written * scale })
  }
  return out
}

/** rsync's rate as `%.2f` and its unit (kB/s, MB/s, GB/s of 1024), as progress.c prints it. */
export function rsyncRate(bytesPerSec) {
  let r = bytesPerSec / 1024
  let unit = 'kB/s'
  if (r > 1024 * 1024) [r, unit] = [r / (1024 * 1024), 'GB/s']
  else if (r > 1024) [r, unit] = [r / 1024, 'MB/s']
  return `${r.toFixed(2)}${unit}`
}

/** rsync's time: `H:MM:SS`. */
const rsyncClock = (secs) => {
  const t = Math.round(secs)
  return `${Math.floor(t / 3600)}:${String(Math.floor(t / 60) % 60).padStart(2, '0')}:${String(t % 60).padStart(2, '0')}`
}

/**
 * One file's rsync --progress redraws at `rate` bytes/s: one every `interval` seconds (rsync redraws
 * at most once a second) with the bytes sent, percent, rate and time left, then the closing line
 * with the time taken. Answers [{ bytes, draw: { pct, rate, time }, at }] for rsyncLine.
 */
export function rsyncPaced(size, rate, interval = 1) {
  const secs = size / rate
  const draws = []
  for (let t = interval; t < secs; t += interval) {
    const bytes = Math.floor(rate * t)
    draws.push({
      bytes,
      draw: { pct: Math.floor((100 * bytes) / size), rate: rsyncRate(rate), time: rsyncClock((size - bytes) / rate) },
      at: t,
    })
  }
  draws.push({ bytes: size, draw: { pct: 100, rate: rsyncRate(rate), time: rsyncClock(secs) }, at: secs })
  return draws
}
