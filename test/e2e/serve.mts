// The server the browser suite drives: the built headless daemon on a loopback port with a known
// admin token and a fresh data dir. When the simulated cluster is available it is wired in too,
// so every view shows live data.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export const E2E_TOKEN = 'e2e-admin-token-0123456789'
const port = process.env.E2E_PORT ?? '19998'
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-e2e-'))

const child = spawn(process.execPath, ['out/main/index.js', '--headless'], {
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: port,
    BIND: '127.0.0.1',
    ADMIN_TOKEN: E2E_TOKEN,
    CHAT_UI_URL: 'http://127.0.0.1:1/chat',
  },
  stdio: 'inherit',
})
const stop = (): void => {
  child.kill('SIGTERM')
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
child.on('exit', (code) => {
  fs.rmSync(dataDir, { recursive: true, force: true })
  process.exit(code ?? 0)
})
