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

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/models')
/** The hub CLI's bars, written from tqdm's format_meter (no recording could be made here). */
const HUB = fs.readFileSync(path.join(fixtures, 'hub-download.raw.txt'), 'utf8')
/** Real `rsync -av --mkpath --progress` output, carriage returns kept. */
const RSYNC = fs.readFileSync(path.join(fixtures, 'rsync-progress.raw.txt'), 'utf8')

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
    if (r.log) seen.log.push(line)
  })
  for (let i = 0; i < text.length; i += chunk) split.push(text.slice(i, i + chunk))
  split.end()
  return seen
}

const LAUNCHER_BEFORE = "Downloading model 'org/name' using uvx...\n"
const LAUNCHER_COPY =
  'Download completed in 00:01:02\nModel directory: /home/spark/.cache/huggingface/hub/models--org--name\n\n' +
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
  })
})

describe('download progress on the hub CLI sample', () => {
  const seen = run(LAUNCHER_BEFORE + HUB)

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

  it('ends at 100 % with nothing left', () => {
    const last = seen.figures[seen.figures.length - 1]!
    expect(last.percent).toBe(100)
    expect(last.eta_s).toBe(0)
    expect(last.bytes_done).toBe(last.bytes_total)
  })

  it('logs text and each finished bar once, not every redraw', () => {
    expect(seen.log[0]).toBe("Downloading model 'org/name' using uvx...")
    expect(seen.log.filter((l) => l.includes('model-00001-of-00002.safetensors: 100%'))).toHaveLength(1)
    expect(seen.log.some((l) => /\|\s+\d+(\.\d+)?[kMG]?\/[\d.]+G \[/.test(l) && !l.includes('100%'))).toBe(false)
  })
})

describe('download progress on the real rsync sample', () => {
  it('enters the copy phase and counts files and bytes against the downloaded size', () => {
    const p = new DownloadProgress()
    run(LAUNCHER_BEFORE + HUB, p)
    const downloaded = p.figures().bytes_total
    expect(downloaded).toBeGreaterThan(8e9)
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
    const percents = copy.map((f) => f.percent ?? 0)
    expect([...percents].sort((a, b) => a - b)).toEqual(percents)
  })

  it('alone (no download figures), counts files from to-chk', () => {
    const seen = run(RSYNC, new DownloadProgress(), 3)
    expect(seen.phases).toEqual(['Connecting', 'Copying to peer nodes'])
    const last = seen.figures[seen.figures.length - 1]!
    // to-chk=0/7 on the last file: every entry of the list is checked.
    expect(last.percent).toBe(100)
    expect(last.bytes_done).toBe(440_401_923)
    expect(last.bytes_total).toBeNull()
    expect(seen.log.filter((l) => l.includes('xfr#'))).toHaveLength(3)
    expect(seen.log).toContain('sending incremental file list')
  })

  it('a finish after exit 0 is Done at 100 %', () => {
    const p = new DownloadProgress()
    run(RSYNC, p)
    p.finish()
    expect(p.phase).toBe('Done')
    expect(p.figures().percent).toBe(100)
  })
})

describe('lines that are not progress', () => {
  it('a bar without a total is a redraw (not logged); plain text is logged and changes nothing', () => {
    const p = new DownloadProgress()
    expect(p.feed('model.safetensors: 1.85GB [00:10, 185MB/s]')).toEqual({ phase: false, progress: false, log: false })
    expect(p.feed('Error: Failed to download model')).toEqual({ phase: false, progress: false, log: true })
    expect(p.feed('   ')).toEqual({ phase: false, progress: false, log: false })
    expect(p.phase).toBe('Connecting')
  })
})
