import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { expect, test, type Page } from '@playwright/test'
import { createIpcAdapter, type IpcEventLike, type IpcSenderLike } from '../../src-main/desktop/ipcAdapter'
import { startDaemon, type TestDaemon } from '../helpers/daemon'

/**
 * The desktop window without Electron: the built renderer in Chromium, the built preload run in
 * the page against a stand-in `ipcRenderer` and `contextBridge`, and the real IPC adapter over a
 * real core in this process. Every value crossing between page and Node is copied with
 * structured clone, as Electron copies it, so an Error could not carry its `code` across.
 */
const OUT = path.resolve('out')

/** Runs in the page before the app: the fake `electron` module the built preload requires. */
function pageElectron(preloadSource: string): string {
  return `(() => {
  const listeners = {};
  const clone = (v) => (typeof v === 'function' ? proxy(v) : structuredClone(v));
  // What contextBridge.exposeInMainWorld makes of a function: arguments and results copied.
  const proxy = (fn) => (...args) => {
    const out = fn(...args.map(clone));
    return out instanceof Promise
      ? out.then(clone, (err) => { throw structuredClone(err) })
      : clone(out);
  };
  const ipcRenderer = {
    invoke: (channel, ...args) => window.__ipcInvoke(channel, args),
    send: (channel, ...args) => { void window.__ipcSend(channel, args) },
    on: (channel, fn) => { (listeners[channel] ??= []).push(fn) },
  };
  window.__ipcDeliver = (channel, args) => { for (const fn of listeners[channel] ?? []) fn({}, ...args) };
  const contextBridge = {
    exposeInMainWorld: (key, api) => {
      const copy = {};
      for (const [k, v] of Object.entries(api)) copy[k] = clone(v);
      window[key] = copy;
    },
  };
  const require = (name) => {
    if (name === 'electron') return { ipcRenderer, contextBridge };
    throw new Error('the preload may only require electron, not ' + name);
  };
  const module = { exports: {} };
  (function (require, module, exports) {
${preloadSource}
  })(require, module, module.exports);
})();`
}

/** Joins the page to the real adapter: Node's side of the stand-in IPC. */
async function wireIpc(page: Page, d: TestDaemon): Promise<() => void> {
  const handlers = new Map<string, (e: IpcEventLike, ...args: unknown[]) => unknown>()
  const listeners = new Map<string, ((e: IpcEventLike, ...args: unknown[]) => void)[]>()
  const sender: IpcSenderLike = {
    id: 1,
    isDestroyed: () => page.isClosed(),
    send: (channel, ...args) => {
      void page
        .evaluate(
          ([c, a]) => (globalThis as unknown as { __ipcDeliver: (c: string, a: unknown[]) => void }).__ipcDeliver(c, a),
          [channel, structuredClone(args)] as const,
        )
        .catch(() => undefined)
    },
    once: () => undefined,
  }
  const event = (): IpcEventLike => ({ sender, senderFrame: { url: page.url() } })
  await page.exposeBinding('__ipcInvoke', async (_src, channel: string, args: unknown[]) => {
    const fn = handlers.get(channel)
    if (!fn) throw new Error(`No handler registered for '${channel}'`)
    return structuredClone(await fn(event(), ...structuredClone(args)))
  })
  await page.exposeBinding('__ipcSend', (_src, channel: string, args: unknown[]) => {
    for (const fn of listeners.get(channel) ?? []) fn(event(), ...structuredClone(args))
  })
  return createIpcAdapter(
    d.core,
    {
      handle: (channel, fn) => void handlers.set(channel, fn),
      removeHandler: (channel) => void handlers.delete(channel),
      on: (channel, fn) => void listeners.set(channel, [...(listeners.get(channel) ?? []), fn]),
      removeListener: (channel, fn) =>
        void listeners.set(
          channel,
          (listeners.get(channel) ?? []).filter((l) => l !== fn),
        ),
    },
    // The page is served over HTTP here, as the dev server serves it to a real window.
    { rendererUrl: d.url },
  )
}

async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

let d: TestDaemon
let dataDir: string
test.beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-ipc-e2e-'))
  // node2 never answers SSH, and the MAC cached for it is malformed: Wake is offered and main refuses it.
  fs.writeFileSync(
    path.join(dataDir, 'connectivity.json'),
    JSON.stringify({ macs: { node2: 'not-a-mac' }, subjects: {}, events: [] }),
  )
  d = await startDaemon({
    dataDir,
    rendererDir: path.join(OUT, 'renderer'),
    env: {
      MONITOR_INTERVAL_S: '0',
      NODE2_HOST: '127.0.0.1',
      NODE2_USER: 'tester',
      NODE2_SSH_PORT: String(await closedPort()),
    },
  })
})
test.afterAll(async () => {
  await d.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

test('the desktop window over the real IPC adapter gets errors from main with their code', async ({ page }) => {
  const dispose = await wireIpc(page, d)
  await page.addInitScript({ content: pageElectron(fs.readFileSync(path.join(OUT, 'preload/index.js'), 'utf8')) })
  try {
    await page.goto(`${d.url}/#/cluster`)
    // No login over IPC: the window is the operator, so the dashboard opens and offers no Log out.
    await expect(page).toHaveURL(/#\/cluster/)
    await expect(page.getByTestId('version')).toBeVisible()
    await expect(page.getByTestId('logout')).toHaveCount(0)
    expect(await page.evaluate(() => Object.keys((globalThis as { tandem?: object }).tandem ?? {}).sort())).toEqual([
      'cancel',
      'invoke',
      'subscribe',
    ])

    const node2 = page.getByRole('article', { name: 'node2 hardware' })
    await expect(node2.getByText('unreachable', { exact: true })).toBeVisible()
    await node2.getByRole('button', { name: 'Wake' }).click()
    const error = node2.getByTestId('wake-error')
    await expect(error).toContainText('the cached MAC for node2 is malformed')
    await expect(error).toHaveAttribute('data-code', 'bad_input')
  } finally {
    dispose()
  }
})
