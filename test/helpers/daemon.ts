import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../../src-main/config/load'
import { createCore, type Core } from '../../src-main/compose'
import type { Clock } from '../../src-main/lib/clock'
import { createLogger, MemorySink, Redactor } from '../../src-main/lib/logger'
import { startHttpServer, type ServerLimits } from '../../src-main/http/listen'

export interface TestDaemon {
  readonly url: string
  /** The daemon's admin token; '' when its admin-token file was rejected (then no admin call works). */
  readonly adminToken: string
  readonly core: Core
  readonly dataDir: string
  /** Every log line the daemon wrote (already redacted). */
  readonly logs: MemorySink
  /** fetch against the daemon with the admin bearer token. */
  admin(pathname: string, init?: RequestInit): Promise<Response>
  stop(): Promise<void>
}

/**
 * The real core and HTTP server, in-process, on 127.0.0.1 with an ephemeral port and a fresh
 * DATA_DIR. Options mirror the environment the daemon would get.
 */
export async function startDaemon(
  opts: {
    env?: Record<string, string>
    clock?: Clock
    dataDir?: string
    rendererDir?: string | null
    start?: boolean
    /** Server limits (short deadlines, small connection caps) instead of the defaults. */
    limits?: Partial<ServerLimits>
  } = {},
): Promise<TestDaemon> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-test-'))
  const env: NodeJS.ProcessEnv = {
    PORT: '0',
    BIND: '127.0.0.1',
    RATE_SOURCES: 'http://127.0.0.1:9',
    ...opts.env,
    DATA_DIR: dataDir,
  }
  const config = loadConfig({ env })
  const logs = new MemorySink()
  const logger = createLogger({
    redactor: new Redactor(),
    sink: logs,
    level: 'debug',
    now: opts.clock ? () => opts.clock!.now() : undefined,
  })
  const core = await createCore({ config, logger, clock: opts.clock })
  if (opts.start !== false) await core.start()
  const http = await startHttpServer(
    core,
    { port: 0, host: '127.0.0.1' },
    {
      rendererDir: opts.rendererDir ?? null,
      limits: opts.limits,
    },
  )
  return {
    url: http.url,
    adminToken: core.adminToken ?? '',
    core,
    dataDir,
    logs,
    admin: (pathname, init = {}) =>
      fetch(http.url + pathname, {
        ...init,
        headers: {
          Authorization: `Bearer ${core.adminToken ?? ''}`,
          ...(init.body ? { 'Content-Type': 'application/json' } : {}),
          ...init.headers,
        },
      }),
    async stop() {
      await http.close()
      await core.stop()
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Reads an SSE response into parsed events until the stream ends. */
export async function readSse(res: Response): Promise<{ event: string; data: string; id?: string }[]> {
  const text = await res.text()
  const out: { event: string; data: string; id?: string }[] = []
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    let event = 'message'
    let id: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
      else if (line.startsWith('id: ')) id = line.slice(4)
    }
    out.push({ event, data: data.join('\n'), id })
  }
  return out
}
