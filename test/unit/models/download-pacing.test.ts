import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { DownloadProgress, type DownloadFigures } from '../../../src-main/models/progress'
import { LineSplitter } from '../../../src-main/ssh/lines'
import { demoDownloadMbps } from '../../sim/demoState'
import { pacedRate, rsyncPaced, rsyncRate, tqdmBar, tqdmClock, xetPaced } from '../../sim/shims/pacing.mjs'
import { rsyncLine, XET_RECORDING, xetFrames } from '../../sim/shims/recordings.mjs'

// The simulator's paced downloads (issue 46 item 6): a demo download takes the time its bytes take at
// the set rate, so the console's progress, rate and ETA are seen, in the real tools' printed format.
const XET = fs.readFileSync(XET_RECORDING, 'utf8')
const GB = 1e9

/** Feeds timed text to the product's parser on a clock at each piece's time; answers the figures after each. */
function parse(pieces: readonly { text: string; at: number }[]): (DownloadFigures & { at: number; phase: string })[] {
  let now = 0
  const p = new DownloadProgress({ now: () => now * 1000 })
  const seen: (DownloadFigures & { at: number; phase: string })[] = []
  const split = new LineSplitter((line) => {
    if (p.feed(line).progress) seen.push({ ...p.figures(), at: now, phase: p.phase })
  })
  for (const { text, at } of pieces) {
    now = at
    split.push(text)
  }
  split.end()
  p.finish()
  seen.push({ ...p.figures(), at: now, phase: p.phase })
  return seen
}

describe('paced Xet replay', () => {
  const frames = xetPaced(XET, { total: 65 * GB, rate: 200e6 })

  it('takes the time 65 GB takes at 200 MB/s, redrawn about once a second', () => {
    expect(frames.at(-1)?.at).toBeCloseTo(325, 3)
    const times = [...new Set(frames.map((f) => f.at))]
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number))
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1 + 1e-9)
    expect(times.length).toBeGreaterThan(300)
    // Bytes on disk only grow, and end at the model's size.
    const written = frames.map((f) => f.written).filter((w): w is number => w !== null)
    expect(written.every((w, i) => i === 0 || w >= (written[i - 1] as number))).toBe(true)
    expect(written.at(-1)).toBeCloseTo(65 * GB, -3)
  })

  it('prints the paced rate and the paced clock in the recorded format', () => {
    const text = frames.map((f) => f.text).join('')
    expect(text).not.toContain('161MB/s')
    // Between the recorded tenths: the recorded cycle redrawn, partial blocks and all.
    expect(text).toContain('\rDownloading bytes: ████▉     | 32.1GB,  200MB/s  \x1b[A\n')
    expect(text).toContain(
      '\rReconstructing (incomplete total...):  49%|████▉     | 32.1GB / 65.0GB,  200MB/s  \x1b[A\x1b[A',
    )
    expect(text).toContain(
      '\rReconstructing (incomplete total...):  50%|█████     | 32.5GB / 65.0GB,  200MB/s  \x1b[A\x1b[A',
    )
    expect(text).toContain('Fetching 4 files: 100%|██████████| 4/4 [05:25<00:00, 81.25s/it]\n')
    expect(text).toContain('Reconstruction complete: 100%|██████████| 65.0GB / 65.0GB,  200MB/s')
  })

  it('replays the recording itself at its own size and speed, except the clock it measured', () => {
    const own = xetPaced(XET, { total: 8.07 * GB, rate: 161e6, interval: 10 })
    const recorded = xetFrames(XET).map((f) => f.frame)
    expect(own.map((f) => f.text.replace(/\[00:50<00:00, 12\.53s\/it\]/, '[00:50<00:00, 12.50s/it]'))).toEqual(recorded)
  })

  it('reads mid-way in the console with a percentage, the rate and an ETA', () => {
    const seen = parse(frames)
    const mid = seen.filter((f) => f.phase === 'Downloading' && f.at > 100 && f.at < 200)
    expect(mid.length).toBeGreaterThan(50)
    for (const f of mid) {
      expect(f.percent).toBeGreaterThan(0)
      expect(f.percent).toBeLessThan(100)
      expect(f.rate).toBe(200e6)
      expect(Math.abs((f.eta_s ?? -1) - (325 - f.at))).toBeLessThan(3)
    }
    // The finished job's average rate is the paced one, not 65 GB over the replay's few seconds.
    const end = seen.at(-1)
    expect(end?.phase).toBe('Done')
    expect((end?.rate ?? 0) / 200e6).toBeCloseTo(1, 1)
  })
})

describe('paced rsync', () => {
  it('draws each second at the rate, as rsync prints it, with the time left then the time taken', () => {
    expect(rsyncRate(200e6)).toBe('190.73MB/s')
    expect(rsyncRate(2e9)).toBe('1.86GB/s')
    expect(rsyncRate(3000)).toBe('2.93kB/s')
    const draws = rsyncPaced(3 * GB, 200e6)
    expect(draws).toHaveLength(15)
    expect(rsyncLine(draws[3]!.bytes, draws[3]!.draw, null)).toBe('\r    800,000,000  26%  190.73MB/s    0:00:11  ')
    const last = draws.at(-1)!
    expect(last.at).toBe(15)
    expect(rsyncLine(last.bytes, last.draw, { xfr: 2, left: 0, total: 7 })).toBe(
      '\r  3,000,000,000 100%  190.73MB/s    0:00:15 (xfr#2, to-chk=0/7)\r\n',
    )
  })

  it('reads in the console as the copy at the rate', () => {
    const lines = [{ text: 'sending incremental file list\r\n', at: 0 }]
    for (const d of rsyncPaced(3 * GB, 200e6)) lines.push({ text: rsyncLine(d.bytes, d.draw, null), at: d.at })
    const mid = parse(lines).filter((f) => f.phase === 'Copying to peer nodes' && f.at > 2 && f.at < 14)
    expect(mid.length).toBeGreaterThan(5)
    for (const f of mid) expect(f.rate! / 200e6).toBeCloseTo(1, 2)
  })
})

describe('the rate knob and tqdm pieces', () => {
  const before = process.env.SIM_DOWNLOAD_MBPS
  afterEach(() => {
    if (before === undefined) delete process.env.SIM_DOWNLOAD_MBPS
    else process.env.SIM_DOWNLOAD_MBPS = before
  })

  it('is MB/s from SIM_DOWNLOAD_MBPS; unset, 0 or not a number keeps the fixed replay', () => {
    process.env.SIM_DOWNLOAD_MBPS = '200'
    expect(pacedRate()).toBe(200e6)
    for (const off of ['0', 'fast', '-5']) {
      process.env.SIM_DOWNLOAD_MBPS = off
      expect(pacedRate()).toBeNull()
    }
  })

  it('is DEMO_DOWNLOAD_MBPS in the demo: 200 unless set, 0 for the fast replay, a word refused', () => {
    expect(demoDownloadMbps(undefined)).toBe(200)
    expect(demoDownloadMbps(' ')).toBe(200)
    expect(demoDownloadMbps('1000')).toBe(1000)
    expect(demoDownloadMbps('0')).toBe(0)
    expect(demoDownloadMbps('fast')).toMatch(/^DEMO_DOWNLOAD_MBPS must be a number of MB\/s/)
    expect(demoDownloadMbps('-1')).toMatch(/^DEMO_DOWNLOAD_MBPS must be/)
  })

  it('draws bars and clocks as tqdm does', () => {
    expect(tqdmBar(0.1, 10)).toBe('█         ')
    expect(tqdmBar(0.15, 10)).toBe('█▌        ')
    expect(tqdmBar(1, 10)).toBe('██████████')
    expect(tqdmBar(0, 10)).toBe('          ')
    expect(tqdmClock(50.1)).toBe('00:50')
    expect(tqdmClock(3725)).toBe('1:02:05')
  })
})
