import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ManualClock, systemClock, type Clock } from '../../src-main/lib/clock'
import { createLogger, type Logger } from '../../src-main/lib/logger'
import { HostKeyStore } from '../../src-main/ssh/hostKeys'
import { ensureServiceKey, type ServiceKey } from '../../src-main/ssh/keys'
import { SshPool, type SshTarget } from '../../src-main/ssh/pool'
import { startSimCluster, type SimCluster, type SimClusterOptions, type SimNode } from './cluster'
import { startFullSim, type FullSim, type FullSimOptions } from './full'

/** A sim cluster plus an SSH pool holding a key every node accepts: the common test set-up. */
export interface SimKit {
  sim: SimCluster
  pool: SshPool
  key: ServiceKey
  hostKeys: HostKeyStore
  dir: string
  clock: Clock
  logger: Logger
  target(node: SimNode): SshTarget
  close(): Promise<void>
}

export async function startSimKit(opts: SimClusterOptions & { clock?: Clock; reuse?: boolean } = {}): Promise<SimKit> {
  return kitAround(async (authorizedKeys) => {
    const sim = await startSimCluster({ ...opts, authorizedKeys })
    return { sim, stop: () => sim.close() }
  }, opts)
}

/** The same over the full sim (the nodes plus their engines and speech fakes): `full` is that sim. */
export async function startFullSimKit(
  opts: FullSimOptions & { clock?: Clock; reuse?: boolean } = {},
): Promise<SimKit & { full: FullSim }> {
  const started: FullSim[] = []
  const kit = await kitAround(async (authorizedKeys) => {
    const full = await startFullSim({ ...opts, authorizedKeys })
    started.push(full)
    return { sim: full.cluster, stop: () => full.close() }
  }, opts)
  return { ...kit, full: started[0] as FullSim }
}

async function kitAround(
  start: (authorizedKeys: string[]) => Promise<{ sim: SimCluster; stop: () => Promise<void> }>,
  opts: { authorizedKeys?: string[]; clock?: Clock; reuse?: boolean },
): Promise<SimKit> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-kit-'))
  const key = ensureServiceKey(path.join(dir, 'ssh'))
  const { sim, stop } = await start([...(opts.authorizedKeys ?? []), key.publicKey])
  const clock = opts.clock ?? systemClock
  const logger = createLogger({ level: 'warn', sink: { write: () => undefined } })
  const hostKeys = new HostKeyStore(path.join(dir, 'known_hosts.json'), () => clock.now())
  const pool = new SshPool({ privateKey: key.privateKey, hostKeys, clock, logger, reuse: opts.reuse })
  return {
    sim,
    pool,
    key,
    hostKeys,
    dir,
    clock,
    logger,
    target: (node) => ({ host: node.address, user: node.user, port: node.port }),
    close: async () => {
      await pool.close()
      await stop()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Deterministic PRNG so a failure names a reproducible case. */
function mulberry32(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PIECES = [
  "'",
  '"',
  '`',
  '$',
  '$(id)',
  '${HOME}',
  '`whoami`',
  '\\',
  '\\\\',
  '\n',
  '\r',
  '\t',
  ' ',
  '  ',
  '*',
  '?',
  '[a-z]',
  '{a,b}',
  '~',
  '!',
  '!!',
  '#',
  ';',
  '&',
  '&&',
  '|',
  '||',
  '>',
  '<',
  '>>',
  '(',
  ')',
  "'\\''",
  '%s',
  '%n',
  '-n',
  '-e',
  '--',
  '=',
  'é',
  'ß',
  '日本語',
  '🦀',
  '\u00a0',
  '\u200b',
  '\x01',
  '\x1b[31m',
  '\x7f',
  'a',
  'Z',
  '0',
  '/',
  '.',
  '..',
  'EOF',
  "$'x'",
]

export function nastyStrings(count: number, seed = 1234): string[] {
  const rnd = mulberry32(seed)
  const out: string[] = ['', "'", "''", '\n', '-n', '-e', '$(rm -rf "$HOME")', "'; echo pwned; '", '\\', '*']
  while (out.length < count) {
    const n = 1 + Math.floor(rnd() * 8)
    let s = ''
    for (let i = 0; i < n; i++) {
      if (rnd() < 0.2) s += String.fromCodePoint(0x20 + Math.floor(rnd() * 0x2fff))
      else s += PIECES[Math.floor(rnd() * PIECES.length)]
    }
    // Lone surrogates cannot round-trip through UTF-8; every other code point must.
    if (!/[\ud800-\udfff]/.test(s.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) out.push(s)
  }
  return out
}

export { ManualClock }
