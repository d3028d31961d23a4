import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  DownloadProgress,
  parseClock,
  parseRate,
  parseSize,
  type DownloadFigures,
} from '../../../src-main/models/progress'
import { LineSplitter } from '../../../src-main/ssh/lines'

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures')
/** Recorded: `uvx hf download` with a current hub (Xet bars), byte for byte. */
const XET = fs.readFileSync(path.join(fixtures, 'downloads/hf-xet-progress.raw.txt'), 'utf8')
/** Recorded: `rsync -av --mkpath --progress`, carriage returns kept. */
const RSYNC = fs.readFileSync(path.join(fixtures, 'downloads/rsync-progress.raw.txt'), 'utf8')
/** Older hubs' per-file bars, written from tqdm's format_meter (no recording exists). */
const PER_FILE = fs.readFileSync(path.join(fixtures, 'models/hub-download.raw.txt'), 'utf8')

interface Seen {
  phases: string[]
  figures: (DownloadFigures & { phase: string })[]
  log: string[]
}

/** Streams text through the same line splitter the SSH pool uses, in awkward chunk sizes. */
function run(text: string, p = new DownloadProgress(), chunk = 7): Seen {
  const seen: Seen = { phases: [p.phase], figures: [], log: [] }
  const split = new LineSplitter((line) => {
    const r = p.feed(line)
    if (r.phase) seen.phases.push(p.phase)
    if (r.progress) seen.figures.push({ ...p.figures(), phase: p.phase })
    seen.log.push(...r.log)
  })
  for (let i = 0; i < text.length; i += chunk) split.push(text.slice(i, i + chunk))
  split.end()
  return seen
}

const LAUNCHER_BEFORE = "Downloading model 'org/name' using uvx...\n"
const LAUNCHER_COPY =
  'Download completed in 00:00:50\nModel directory: /home/spark/.cache/huggingface/hub/models--org--name\n\n' +
  'Copying model to 1 host(s): 192.168.177.12\nParallel copy enabled.\n' +
  "Copying model 'org/name' to spark@192.168.177.12...\n"

describe('tqdm figures', () => {
  it('reads sizes, clocks and rates as tqdm prints them', () => {
    expect(parseSize('1.85G')).toBeCloseTo(1.85e9)
    expect(parseSize('214')).toBe(214)
    expect(parseSize('?')).toBeNull()
    expect(parseClock('01:02')).toBe(62)
    expect(parseClock('1:02:03')).toBe(3723)
    expect(parseClock('?')).toBeNull()
    expect(parseRate('185MB/s')).toBeCloseTo(185e6)
    expect(parseRate('1.20it/s')).toBeCloseTo(1.2)
    expect(parseRate('2.50s/it')).toBeCloseTo(0.4)
    expect(parseRate('?B/s')).toBeNull()
    expect(parseRate('???B/s')).toBeNull()
  })
})

describe('download progress on the recorded Xet bars (current hub CLI)', () => {
  const seen = run(LAUNCHER_BEFORE + XET)

  it('goes Connecting → Fetching 4 files → Downloading', () => {
    expect(seen.phases).toEqual(['Connecting', 'Fetching 4 files', 'Downloading'])
  })

  it('reads bytes written against the total, with rate and ETA, from the first rate to the end', () => {
    const downloading = seen.figures.filter((f) => f.phase === 'Downloading')
    const firstRate = downloading.findIndex((f) => f.rate !== null)
    expect(firstRate).toBeGreaterThanOrEqual(0)
    for (const f of downloading.slice(firstRate)) {
      expect(f.bytes_total).toBe(8.07e9)
      expect(f.bytes_done).not.toBeNull()
      expect(f.percent).not.toBeNull()
      expect(f.rate).toBe(161e6)
      expect(f.eta_s).toBe(Math.round((f.bytes_total! - f.bytes_done!) / f.rate!))
    }
    const half = downloading.find((f) => f.bytes_done === 4.04e9)
    expect(half).toMatchObject({ percent: 50.1, eta_s: 25 })
    const last = seen.figures[seen.figures.length - 1]!
    expect(last).toMatchObject({ percent: 100, bytes_done: 8.07e9, bytes_total: 8.07e9, eta_s: 0, rate: 161e6 })
    expect(last.elapsed_s).toBe(50)
  })

  it('percent only grows, and never moves with the file count alone once bytes are known', () => {
    const percents = seen.figures.filter((f) => f.phase === 'Downloading').map((f) => f.percent ?? 0)
    expect([...percents].sort((a, b) => a - b)).toEqual(percents)
    expect(new Set(percents).size).toBeGreaterThan(8)
  })

  it('logs one line per state change and each bar once at its end, never the redraws', () => {
    expect(seen.log).toEqual([
      "Downloading model 'org/name' using uvx...",
      'Fetching 4 files:   0%|          | 0/4 [00:00<?, ?it/s]',
      expect.stringMatching(/^Reconstructing \(incomplete total\.\.\.\): {3}0%\|\s+\| {2}0\.00B \/ 8\.07GB$/),
      expect.stringMatching(/^Fetching 4 files: 100%\|█{10}\| 4\/4 \[00:50<00:00, 12\.50s\/it\]$/),
      expect.stringMatching(/^Download complete: : █{10}\| 8\.07GB, {2}161MB\/s$/),
      expect.stringMatching(/^Reconstruction complete: 100%\|█{10}\| 8\.07GB \/ 8\.07GB, {2}161MB\/s$/),
    ])
    expect(seen.log.some((l) => l.includes('\x1b'))).toBe(false)
  })

  it('gives the same figures and log however the output is split across reads', () => {
    const whole = run(LAUNCHER_BEFORE + XET, new DownloadProgress(), 1 << 20)
    for (const chunk of [1, 2, 3, 5, 64, 333]) {
      const parts = run(LAUNCHER_BEFORE + XET, new DownloadProgress(), chunk)
      expect(parts.figures).toEqual(whole.figures)
      expect(parts.log).toEqual(whole.log)
      expect(parts.phases).toEqual(whole.phases)
    }
  })

  it('a cut-off download logs the last redraw of each bar when flushed', () => {
    const cut = XET.indexOf('\rReconstructing (incomplete total...):  60%')
    const p = new DownloadProgress()
    const seenCut = run(XET.slice(0, cut), p)
    expect(seenCut.log.some((l) => l.includes(' 50%|'))).toBe(false)
    const tail = p.flush()
    expect(tail).toHaveLength(2)
    expect(tail).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Reconstructing \(incomplete total\.\.\.\): {2}50%\|.*4\.04GB \/ 8\.07GB, {2}161MB\/s$/),
        expect.stringMatching(/^Downloading bytes: █+\s*\| 4\.84GB, {2}161MB\/s$/),
      ]),
    )
    expect(p.flush()).toEqual([])
  })

  it('Done keeps the average rate of the whole download (bytes over the bar’s elapsed time)', () => {
    const p = new DownloadProgress()
    run(XET, p)
    p.finish()
    expect(p.phase).toBe('Done')
    expect(p.figures()).toMatchObject({
      percent: 100,
      bytes_done: 8.07e9,
      bytes_total: 8.07e9,
      eta_s: 0,
      rate: Math.round(8.07e9 / 50),
    })
  })
})

/** tqdm's default meter for the older hubs' one aggregated bar (format_meter: l_bar, bar, r_bar). */
function aggregatedBar(desc: string, done: string, total: string, pct: number, clock: string, rate: string): string {
  const full = Math.floor(pct / 10)
  const bar = '█'.repeat(full) + ' '.repeat(10 - full)
  return `\r${desc}: ${String(pct).padStart(3)}%|${bar}| ${done}/${total} [${clock}, ${rate}]`
}

describe('download progress on the older aggregated bar', () => {
  const desc = 'Downloading (incomplete total...)'
  const text =
    'Fetching 4 files:   0%|          | 0/4 [00:00<?, ?it/s]\n' +
    `\r${desc}: 0.00B [00:00, ?B/s]` +
    aggregatedBar(desc, '0.00', '8.07G', 0, '00:00<?', '?B/s') +
    aggregatedBar(desc, '3.39G', '8.07G', 42, '00:21<00:29', '161MB/s') +
    aggregatedBar(desc, '8.07G', '8.07G', 100, '00:50<00:00', '161MB/s') +
    // snapshot_download renames the same bar when it ends: not a second file.
    aggregatedBar('Download complete', '8.07G', '8.07G', 100, '00:50<00:00', '161MB/s') +
    '\n\rFetching 4 files: 100%|██████████| 4/4 [00:50<00:00, 12.50s/it]\n'

  it('counts the renamed bar once: the total stays the model size', () => {
    const seen = run(text)
    expect(seen.phases).toEqual(['Connecting', 'Fetching 4 files', 'Downloading'])
    for (const f of seen.figures.filter((x) => x.phase === 'Downloading')) expect(f.bytes_total).toBe(8.07e9)
    const mid = seen.figures.find((f) => f.percent === 42)
    expect(mid).toMatchObject({ bytes_done: 3.39e9, rate: 161e6, eta_s: Math.round((8.07e9 - 3.39e9) / 161e6) })
    const last = seen.figures[seen.figures.length - 1]!
    expect(last).toMatchObject({ percent: 100, bytes_done: 8.07e9, bytes_total: 8.07e9, eta_s: 0 })
    expect(seen.log.filter((l) => l.includes('8.07G/8.07G'))).toHaveLength(1)
  })
})

describe('download progress on the older per-file bars', () => {
  const seen = run(LAUNCHER_BEFORE + PER_FILE)

  it('goes Connecting → Fetching N files → Downloading', () => {
    expect(seen.phases).toEqual(['Connecting', 'Fetching 6 files', 'Downloading'])
  })

  it('sums the parallel shard bars into bytes done and total, rate and ETA', () => {
    const mid = seen.figures.find((f) => f.bytes_total !== null && f.bytes_total > 8e9 && (f.percent ?? 0) > 40)
    expect(mid).toBeDefined()
    // 4.97G + 3.12G of shards plus the small files.
    expect(mid!.bytes_total).toBeGreaterThan(8.09e9)
    expect(mid!.bytes_total).toBeLessThan(8.11e9)
    expect(mid!.rate).toBeGreaterThan(150e6)
    expect(mid!.rate).toBeLessThan(180e6)
    expect(mid!.eta_s).toBe(Math.round((mid!.bytes_total! - mid!.bytes_done!) / mid!.rate!))
    expect(mid!.elapsed_s).toBeGreaterThan(0)
  })

  it('ends at 100 % with nothing left, keeping the last rate', () => {
    const last = seen.figures[seen.figures.length - 1]!
    expect(last.percent).toBe(100)
    expect(last.eta_s).toBe(0)
    expect(last.bytes_done).toBe(last.bytes_total)
    expect(last.rate).not.toBeNull()
  })

  it('logs text and each finished bar once, not every redraw', () => {
    expect(seen.log[0]).toBe("Downloading model 'org/name' using uvx...")
    expect(seen.log.filter((l) => l.includes('model-00001-of-00002.safetensors: 100%'))).toHaveLength(1)
    expect(seen.log.some((l) => /\|\s+\d+(\.\d+)?[kMG]?\/[\d.]+G \[/.test(l) && !l.includes('100%'))).toBe(false)
  })
})

describe('download progress on the recorded rsync output', () => {
  it('enters the copy phase and counts files and bytes against the downloaded size', () => {
    const p = new DownloadProgress()
    run(LAUNCHER_BEFORE + XET, p)
    const downloaded = p.figures().bytes_total
    expect(downloaded).toBe(8.07e9)
    const seen = run(LAUNCHER_COPY + RSYNC, p, 5)
    expect(seen.phases.slice(1)).toEqual(['Copying to peer nodes'])
    const copy = seen.figures.filter((f) => f.phase === 'Copying to peer nodes')
    // The sample's files add up to 440,401,923 bytes (3 + 314,572,800 + 125,829,120).
    const last = copy[copy.length - 1]!
    expect(last.bytes_done).toBe(3 + 314_572_800 + 125_829_120)
    expect(last.bytes_total).toBe(downloaded)
    // Mid-file: the finished files plus the bytes of the one in flight, at rsync's rate (MB = 2^20).
    const inFlight = copy.find((f) => f.bytes_done === 3 + 125_698_048)
    expect(inFlight).toBeDefined()
    expect(inFlight!.rate).toBe(Math.round(58.62 * 1024 * 1024))
    expect(inFlight!.eta_s).toBe(Math.round((downloaded! - inFlight!.bytes_done!) / inFlight!.rate!))
    const percents = copy.map((f) => f.percent ?? 0)
    expect([...percents].sort((a, b) => a - b)).toEqual(percents)
  })

  it('alone (no download figures), counts files from to-chk and logs each file once', () => {
    const seen = run(RSYNC, new DownloadProgress(), 3)
    expect(seen.phases).toEqual(['Connecting', 'Copying to peer nodes'])
    const last = seen.figures[seen.figures.length - 1]!
    // to-chk=0/7 on the last file: every entry of the list is checked.
    expect(last.percent).toBe(100)
    expect(last.bytes_done).toBe(440_401_923)
    expect(last.bytes_total).toBeNull()
    expect(seen.log.filter((l) => l.includes('xfr#'))).toHaveLength(3)
    expect(seen.log).toContain('sending incremental file list')
    expect(seen.log.some((l) => /\d%\s+[\d.]+MB\/s\s+\d+:\d\d:\d\d$/.test(l))).toBe(false)
  })

  it('a finish after exit 0 is Done at 100 % with the copy’s average rate', () => {
    const p = new DownloadProgress()
    run(RSYNC, p)
    p.finish()
    expect(p.phase).toBe('Done')
    // Three files in 0 + 5 + 2 seconds, as rsync reported them.
    expect(p.figures()).toMatchObject({ percent: 100, eta_s: 0, rate: Math.round(440_401_923 / 7) })
  })

  it('a copy Tandem starts itself enters the copy phase before rsync prints anything', () => {
    const p = new DownloadProgress()
    run(XET, p)
    const r = p.startCopy()
    expect(r.phase).toBe(true)
    expect(p.phase).toBe('Copying to peer nodes')
    expect(p.figures()).toMatchObject({ percent: 0, bytes_done: 0, bytes_total: 8.07e9 })
    expect(p.startCopy().phase).toBe(false)
  })

  it('copying to two peers counts both copies against twice the downloaded size', () => {
    const p = new DownloadProgress({ copies: 2 })
    run(XET, p)
    p.startCopy()
    expect(p.figures()).toMatchObject({ percent: 0, bytes_total: 2 * 8.07e9 })
    run(RSYNC, p)
    const once = p.figures()
    expect(once.bytes_done).toBe(440_401_923)
    expect(once.percent).toBe(Math.round((1000 * 440_401_923) / (2 * 8.07e9)) / 10)
    run(RSYNC, p)
    expect(p.figures().bytes_done).toBe(2 * 440_401_923)
  })
})

describe('the average rate without a clock in the output', () => {
  it('falls back to the wall-clock time of the phase', () => {
    let now = 1_000_000
    const p = new DownloadProgress({ now: () => now })
    p.feed('Downloading bytes:           |  0.00B            ')
    p.feed('Reconstructing (incomplete total...):   0%|          |  0.00B / 2.00GB            ')
    now += 20_000
    p.feed('Reconstructing (incomplete total...): 100%|██████████| 2.00GB / 2.00GB,  100MB/s  ')
    p.finish()
    expect(p.figures()).toMatchObject({ percent: 100, bytes_done: 2e9, rate: 1e8 })
  })
})

describe('lines that are not progress', () => {
  it('a bar without a total is a redraw (not logged); plain text is logged and changes nothing', () => {
    const p = new DownloadProgress()
    expect(p.feed('model.safetensors: 1.85GB [00:10, 185MB/s]')).toEqual({ phase: false, progress: false, log: [] })
    expect(p.feed('Error: Failed to download model')).toEqual({
      phase: false,
      progress: false,
      log: ['Error: Failed to download model'],
    })
    expect(p.feed('   ')).toEqual({ phase: false, progress: false, log: [] })
    expect(p.phase).toBe('Connecting')
  })
})

describe('a resumed download', () => {
  // tqdm's default meter (tqdm/std.py format_meter) for hf_hub_download resuming a file: the bar
  // starts at the bytes already on disk (tqdm's `initial`), its elapsed time counts this run only.
  const resumed = [
    'model.safetensors:  50%|█████     | 4.03G/8.07G [00:00<?, ?B/s]',
    'model.safetensors:  75%|███████▌  | 6.05G/8.07G [00:20<00:20, 101MB/s]',
    'model.safetensors: 100%|██████████| 8.07G/8.07G [00:40<00:00, 101MB/s]',
  ]
  it('reports the bytes that crossed the network over the time, not the whole file over it', () => {
    let now = 0
    const p = new DownloadProgress({ now: () => now })
    for (const l of resumed) {
      p.feed(l)
      now += 20_000
    }
    p.finish()
    // 4.04 GB in 40 s is 101 MB/s; the whole 8.07 GB over 40 s would claim 202 MB/s.
    expect(p.figures()).toMatchObject({ percent: 100, bytes_done: 8.07e9, rate: 101_000_000 })
  })
})
