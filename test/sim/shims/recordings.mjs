// The recorded tool output the download shims replay (test/fixtures/downloads, see its README), and
// the few rules needed to replay it for other sizes in exactly the recorded format.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'downloads')
export const XET_RECORDING = path.join(FIXTURES, 'hf-xet-progress.raw.txt')
export const RSYNC_RECORDING = path.join(FIXTURES, 'rsync-progress.raw.txt')

/** A knob: the environment variable, else the file of that name in $SIM_STATE, else the default. */
export function knob(env, file, fallback) {
  const v = process.env[env]
  if (v !== undefined && v !== '') return v
  try {
    const s = fs.readFileSync(path.join(process.env.SIM_STATE ?? '', file), 'utf8').trim()
    if (s !== '') return s
  } catch {
    // no such knob file
  }
  return fallback
}

export const sleep = (seconds) => new Promise((r) => setTimeout(r, Math.max(0, seconds * 1000)))

const SI = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Z: 1e21, Y: 1e24 }
export const parseSi = (text) => {
  const m = /^([\d.]+)([kMGTPEZY]?)$/.exec(text)
  return m ? Number(m[1]) * SI[m[2]] : null
}

/** tqdm's format_sizeof (powers of 1000, three significant digits). */
export function formatSizeof(num) {
  for (const unit of ['', 'k', 'M', 'G', 'T', 'P', 'E', 'Z']) {
    if (Math.abs(num) < 999.5) {
      if (Math.abs(num) < 99.95) {
        if (Math.abs(num) < 9.995) return num.toFixed(2) + unit
        return num.toFixed(1) + unit
      }
      return num.toFixed(0).padStart(3) + unit
    }
    num /= 1000
  }
  return num.toFixed(1) + 'Y'
}

/** huggingface_hub's speed postfix (`"{s}B/s  ".rjust(10)`), after tqdm's `", "`. */
const speedPostfix = (rate) => `, ${`${rate === null ? '???' : formatSizeof(rate)}B/s  `.padStart(10)}`

/**
 * The tail of a Xet bar after its last `| `: `{n_fmt:>5}B / {total_fmt:>5}B{postfix:>12}` (bytes
 * written) or `{n_fmt:>5}B{postfix:>12}` (bytes received), then the spaces tqdm pads a shorter redraw
 * with. Returns the tail redrawn with the figures `redraw` gives for the shown ones (a field the tail
 * does not show stays unshown), or null when it is not such a tail.
 */
export function redrawXetTail(tail, redraw) {
  const m = /^ *([\d.]+[kMGTPEZY]?)B(?: \/ *([\d.]+[kMGTPEZY]?)B)?(?:, +([\d.]+[kMGTPEZY]?|\?\?\?)B\/s {2})?( *)$/.exec(
    tail,
  )
  if (!m) return null
  const hasRate = m[3] !== undefined
  const render = (n, total, rate) =>
    `${formatSizeof(n).padStart(5)}B` +
    (total === null ? '' : ` / ${formatSizeof(total).padStart(5)}B`) +
    (hasRate ? speedPostfix(rate) : '').padStart(12)
  const shown = {
    n: parseSi(m[1]),
    total: m[2] === undefined ? null : parseSi(m[2]),
    rate: hasRate && m[3] !== '???' ? parseSi(m[3]) : null,
  }
  const extra = tail.length - render(shown.n, shown.total, shown.rate).length
  if (extra < 0) return null
  const next = redraw(shown)
  return render(next.n, shown.total === null ? null : next.total, next.rate) + ' '.repeat(extra)
}

/** A Xet bar's tail redrawn for sizes (and, unless `rate` is given, the speed) times `scale`. */
export function rescaleXetTail(tail, scale, rate = null) {
  const scaled = (v) => (v === null ? null : v * scale)
  return redrawXetTail(tail, (f) => ({
    n: scaled(f.n),
    total: scaled(f.total),
    rate: f.rate === null ? null : (rate ?? scaled(f.rate)),
  }))
}

/** The Xet recording as redraws: each piece starts at a `\r`; `written` is the bytes-written bar's n, if any. */
export function xetFrames(text) {
  return text
    .split(/(?=\r)/)
    .filter((f) => f !== '')
    .map((frame) => {
      const m = /^\r(Reconstruct[^|]*\|[^|]*\| *)([\d.]+[kMGTPEZY]?)B \//.exec(frame)
      return { frame, written: m ? parseSi(m[2]) : null }
    })
}

/** The size the recording declares: the largest total of its bytes-written bar. */
export function declaredTotal(text) {
  let best = 0
  for (const m of text.matchAll(/B \/ *([\d.]+[kMGTPEZY]?)B/g)) best = Math.max(best, parseSi(m[1]) ?? 0)
  return best
}

/**
 * One frame redrawn for sizes times `scale` (the bar graphics and percentages do not change); with
 * `rate`, every speed it shows is that rate (bytes/s) instead of the recorded one scaled.
 */
export function rescaleFrame(frame, scale, rate = null) {
  if (scale === 1 && rate === null) return frame
  // eslint-disable-next-line no-control-regex -- tqdm's cursor-up is part of the recorded frame
  const end = /((?:\x1b\[A|\n)*)$/.exec(frame)
  const body = frame.slice(0, frame.length - end[1].length)
  const cut = body.lastIndexOf('| ')
  if (cut < 0 || !/^\r(Downloading bytes|Download complete|Reconstruct)/.test(body)) return frame
  const tail = rescaleXetTail(body.slice(cut + 2), scale, rate)
  return tail === null ? frame : body.slice(0, cut + 2) + tail + end[1]
}

/**
 * The recorded rsync run per file: its size and its redraws (share of the file sent, percent, rate and
 * time as printed), the last one being the file's closing line. Files are in the recorded order.
 */
export function rsyncPattern(text) {
  const files = []
  for (const line of text.split('\r\n')) {
    const draws = [...line.matchAll(/\r +([\d,]+) +(\d+)% +(\S+) +(\d+:\d\d:\d\d)/g)]
    if (draws.length === 0) continue
    const size = Number(draws[draws.length - 1][1].replace(/,/g, ''))
    const share = (d) => (size > 0 ? Number(d[1].replace(/,/g, '')) / size : 1)
    files.push({ size, draws: draws.map((d) => ({ share: share(d), pct: Number(d[2]), rate: d[3], time: d[4] })) })
  }
  return files
}

const RSYNC_UNITS = { kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }

/**
 * A recorded redraw replayed for a file of `size` bytes (the recorded file had `recordedSize`): the
 * same share sent, percent and rate; the time (remaining, or taken on the last line) follows from the
 * rate, as rsync computes it, so a larger file takes longer. The same size replays the recording as is.
 */
export function replayDraw(draw, size, recordedSize, last) {
  const bytes = last ? size : size * draw.share
  const m = /^([\d.]+)(kB|MB|GB)\/s$/.exec(draw.rate)
  const rate = m ? Number(m[1]) * RSYNC_UNITS[m[2]] : 0
  if (size === recordedSize || rate <= 0) return { bytes, draw }
  const secs = Math.round((last ? size : size - bytes) / rate)
  const time = `${Math.floor(secs / 3600)}:${String(Math.floor(secs / 60) % 60).padStart(2, '0')}:${String(secs % 60).padStart(2, '0')}`
  return { bytes, draw: { ...draw, time } }
}

/** rsync's thousands separators (`human_num` at the default level). */
export const commas = (n) => Math.round(n).toLocaleString('en-US')

/** One rsync --progress line: `"\r%15s %3d%% %s %s"`, then `  ` or the file's closing ` (xfr#N, to-chk=K/T)`. */
export function rsyncLine(bytes, draw, close) {
  const head = `\r${commas(bytes).padStart(15)} ${String(draw.pct).padStart(3)}% ${draw.rate.padStart(11)} ${draw.time.padStart(10)}`
  return close ? `${head} (xfr#${close.xfr}, to-chk=${close.left}/${close.total})\r\n` : `${head}  `
}
