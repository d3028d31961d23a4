import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { expect, test, type Page } from '@playwright/test'
import { logIn } from './login'

// Issue 31, findings 3 and 4, from the demo's own terminal commands. This spec runs its own demo
// (the shared one takes no commands) on another loopback port, typing into its stdin as an
// operator would.
const PORT = Number(process.env.E2E_NODE_DOWN_PORT ?? 19_987)
const DATA_DIR = path.join('test-results', 'e2e-node-down-data')

let demo: ChildProcessWithoutNullStreams
let output = ''

/** Waits (bounded) until the demo has printed `text` after position `from`. */
async function printed(text: string, from = 0, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!output.slice(from).includes(text)) {
    if (Date.now() > until) throw new Error(`the demo never printed ${JSON.stringify(text)}:\n${output.slice(-2000)}`)
    if (demo.exitCode !== null) throw new Error(`the demo exited (${demo.exitCode}):\n${output.slice(-2000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Types a command into the demo's terminal and waits for its answer. */
async function command(line: string, answer: string): Promise<void> {
  const from = output.length
  demo.stdin.write(`${line}\n`)
  await printed(`sim: ${answer}`, from, 15_000)
}

async function showServices(page: Page): Promise<void> {
  const toggle = page.getByTestId('menu-toggle')
  if (await toggle.isVisible()) await toggle.click()
  await page.getByTestId('nav-services').click()
  await expect(page).toHaveURL(/#\/services/)
}

test.describe.configure({ mode: 'serial' })
test.use({ baseURL: `http://127.0.0.1:${PORT}`, viewport: { width: 1440, height: 900 } })

test.beforeAll(async () => {
  test.setTimeout(90_000)
  fs.rmSync(DATA_DIR, { recursive: true, force: true })
  demo = spawn(path.join('node_modules', '.bin', 'tsx'), ['test/sim/demo.mts'], {
    env: {
      ...process.env,
      DEMO_PORT: String(PORT),
      DEMO_DATA_DIR: DATA_DIR,
      ADMIN_TOKEN: 'e2e-admin-token-0123456789',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  demo.stdout.on('data', (c: Buffer) => (output += c.toString()))
  demo.stderr.on('data', (c: Buffer) => (output += c.toString()))
  await printed('Tandem demo is running')
})

test.afterAll(async () => {
  if (!demo || demo.exitCode !== null) return
  const exited = new Promise((r) => demo.once('exit', r))
  demo.kill('SIGTERM')
  await exited
})

test('a fault on asr: the card turns Unhealthy and the deep-health row fails with it, then both recover', async ({
  page,
}) => {
  await logIn(page)
  await showServices(page)
  const card = page.getByRole('article', { name: 'service asr' })
  const row = page.locator('tr[data-service="asr"]')
  await expect(card.locator('.badge').first()).toHaveText('Healthy')

  await command('fault asr error500', 'asr fault error500')
  await page.getByRole('button', { name: 'Refresh' }).first().click()
  await expect(card.locator('.badge').first()).toHaveText('Unhealthy')
  // No "Run now": the card turning Unhealthy starts the probe.
  await expect(row.locator('.badge').first()).toHaveText(/wedged|failing/)

  await command('fault asr none', 'asr fault none')
  await page.getByRole('button', { name: 'Refresh' }).first().click()
  await expect(card.locator('.badge').first()).toHaveText('Healthy')
  await expect(row.locator('.badge').first()).toHaveText('ok')
})

test('node2 down: asr and tts are Unknown (node unreachable) with Start disabled and the reason shown', async ({
  page,
}) => {
  await logIn(page)
  await showServices(page)
  await command('down node2', 'node2 down')
  // The services list reuses a container inspection for 2 s: look again once that is past.
  await page.waitForTimeout(2500)
  await page.getByRole('button', { name: 'Refresh' }).first().click()
  for (const name of ['asr', 'tts']) {
    const card = page.getByRole('article', { name: `service ${name}` })
    await expect(card.locator('.badge').first()).toHaveText('Unknown (node unreachable)', { timeout: 15_000 })
    await expect(card.getByRole('button', { name: 'Start', exact: true })).toBeDisabled()
    await expect(card.getByRole('button', { name: 'Restart', exact: true })).toBeDisabled()
    await expect(card.getByRole('note')).toContainText('node2 is unreachable over SSH')
  }
  // The llm on node1 is untouched.
  await expect(page.getByRole('article', { name: 'service llm' }).locator('.badge').first()).toHaveText('Healthy')
  await command('up node2', 'node2 up')
})
