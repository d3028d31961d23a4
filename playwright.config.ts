import { defineConfig } from '@playwright/test'

const PORT = Number(process.env.E2E_PORT ?? 19_998)
export const E2E_TOKEN = 'e2e-admin-token-0123456789'

/** The specs that run a demo of their own on their own port (useOwnDemo). */
export const OWN_DEMO_SPECS = [
  'downloads-where-you-look',
  'fresh-demo',
  'models-progress',
  'node-down',
  'placements',
  'states',
  'timeline-truth',
  'two-placements',
].map((name) => `**/${name}.spec.ts`)

// Debian's Chromium, never a downloaded browser; flags keep it off the network (STACK.md).
export default defineConfig({
  testDir: 'test/e2e',
  timeout: 60_000,
  fullyParallel: false,
  // Two lanes: the specs that share the one demo run one after another, and beside them, one after
  // another, the specs that start a demo of their own (ownDemo.ts) and never touch the shared one.
  // Two own demos at once starve each other's simulated loads on two cores (a placement missed its
  // 20 s), so that lane stays one wide.
  workers: 2,
  projects: [
    { name: 'shared-demo', testIgnore: OWN_DEMO_SPECS, workers: 1 },
    { name: 'own-demo', testMatch: OWN_DEMO_SPECS, workers: 1 },
  ],
  reporter: [['list'], ['json', { outputFile: 'test-results/playwright.json' }]],
  outputDir: 'test-results/playwright',
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1360, height: 860 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    },
  },
  // The browser suite drives the demo itself: simulated cluster + built headless daemon.
  webServer: {
    command: `rm -rf test-results/e2e-data && tsx test/sim/demo.mts`,
    // Ready once the demo has seeded its shop (a public product page answers only then).
    url: `http://127.0.0.1:${PORT}/v1/products/notes`,
    env: {
      DEMO_PORT: String(PORT),
      DEMO_DATA_DIR: 'test-results/e2e-data',
      // A swap's load lasts long enough to reload mid-swap and watch its ETA count down (models-truth.spec.ts).
      DEMO_LOAD_MS: '15000',
      // The shared demo's downloads replay fast; a spec that watches one mid-way runs its own demo.
      DEMO_DOWNLOAD_MBPS: '0',
      ADMIN_TOKEN: E2E_TOKEN,
      CHAT_UI_URL: 'http://127.0.0.1:1/chat',
    },
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: 'pipe',
    stderr: 'pipe',
  },
})
