import { test } from '@playwright/test'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { E2E_TOKEN } from '../../playwright.config'

/**
 * A demo of a spec's own, on another loopback port: the shared one takes no terminal commands, and
 * a spec that downs a node or places a model must not change what the other specs see.
 */
export interface OwnDemo {
  /** Waits (bounded) until the demo has printed `text` after position `from` of its output. */
  printed(text: string, from?: number, timeoutMs?: number): Promise<void>
  /** Types a command into the demo's terminal, as an operator would, and waits for its `sim: <answer>`. */
  command(line: string, answer: string): Promise<void>
  stop(): Promise<void>
}

/** Starts `test/sim/demo.mts` with `env` on `port`, its data in test-results/<dataDir>; resolves once it runs. */
export async function startOwnDemo(port: number, dataDir: string, env: Record<string, string> = {}): Promise<OwnDemo> {
  const dir = path.join('test-results', dataDir)
  fs.rmSync(dir, { recursive: true, force: true })
  const demo: ChildProcessWithoutNullStreams = spawn(path.join('node_modules', '.bin', 'tsx'), ['test/sim/demo.mts'], {
    env: { ...process.env, ...env, DEMO_PORT: String(port), DEMO_DATA_DIR: dir, ADMIN_TOKEN: E2E_TOKEN },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let output = ''
  demo.stdout.on('data', (c: Buffer) => (output += c.toString()))
  demo.stderr.on('data', (c: Buffer) => (output += c.toString()))

  const printed = async (text: string, from = 0, timeoutMs = 60_000): Promise<void> => {
    const until = Date.now() + timeoutMs
    while (!output.slice(from).includes(text)) {
      if (Date.now() > until) throw new Error(`the demo never printed ${JSON.stringify(text)}:\n${output.slice(-2000)}`)
      if (demo.exitCode !== null) throw new Error(`the demo exited (${demo.exitCode}):\n${output.slice(-2000)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const command = async (line: string, answer: string): Promise<void> => {
    const from = output.length
    demo.stdin.write(`${line}\n`)
    await printed(`sim: ${answer}`, from, 15_000)
  }
  const stop = async (): Promise<void> => {
    if (demo.exitCode !== null) return
    const exited = new Promise((r) => demo.once('exit', r))
    demo.kill('SIGTERM')
    await exited
  }
  await printed('Tandem demo is running')
  return { printed, command, stop }
}

/**
 * A spec's own demo for all its tests: started once before them (and, when `ready` is given, until
 * it has printed that), stopped after them. The spec's tests run in order against its port.
 */
export function useOwnDemo(
  port: number,
  dataDir: string,
  env: Record<string, string> = {},
  opts: { ready?: string; startTimeoutMs?: number } = {},
): OwnDemo {
  let demo: OwnDemo | undefined
  test.describe.configure({ mode: 'serial' })
  test.use({ baseURL: `http://127.0.0.1:${port}` })
  test.beforeAll(async () => {
    test.setTimeout(opts.startTimeoutMs ?? 90_000)
    demo = await startOwnDemo(port, dataDir, env)
    if (opts.ready !== undefined) await demo.printed(opts.ready)
  })
  test.afterAll(async () => {
    await demo?.stop()
  })
  const started = (): OwnDemo => {
    if (!demo) throw new Error(`the demo on port ${port} has not started`)
    return demo
  }
  return {
    printed: (text, from, timeoutMs) => started().printed(text, from, timeoutMs),
    command: (line, answer) => started().command(line, answer),
    stop: async () => demo?.stop(),
  }
}
