import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ManualClock, systemClock, type Clock } from '../../src-main/core/clock'
import { createLogger, type Logger } from '../../src-main/core/logger'
import { HostKeyStore } from '../../src-main/ssh/hostKeys'
import { ensureServiceKey, type ServiceKey } from '../../src-main/ssh/keys'
import { SshPool, type SshTarget } from '../../src-main/ssh/pool'
import { startSimCluster, type SimCluster, type SimClusterOptions, type SimNode } from './cluster'

/** A sim cluster plus an SSH pool holding a key both nodes accept: the common test set-up. */
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-kit-'))
  const key = ensureServiceKey(path.join(dir, 'ssh'))
  const sim = await startSimCluster({ ...opts, authorizedKeys: [...(opts.authorizedKeys ?? []), key.publicKey] })
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
    target: (node) => ({ host: '127.0.0.1', user: node.user, port: node.port }),
    close: async () => {
      await pool.close()
      await sim.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

export { ManualClock }
