import { createApp, nextTick, type App, type Component } from 'vue'
import { createPinia } from 'pinia'
import { initBackend, type BackendApi } from '../../../src-renderer/api'

/**
 * Mounting a view or panel against a fake BackendApi in happy-dom, shared by the renderer tests.
 * Call `unmountAll` from `afterEach`.
 */
const mounted: App[] = []

export async function mountWith(
  component: Component,
  api: BackendApi,
  props?: Record<string, unknown>,
): Promise<HTMLElement> {
  initBackend(() => undefined, api)
  const el = document.createElement('div')
  document.body.appendChild(el)
  const app = createApp(component, props).use(createPinia())
  app.mount(el)
  mounted.push(app)
  await flush()
  return el
}

export function unmountAll(): void {
  for (const app of mounted.splice(0)) app.unmount()
  document.body.innerHTML = ''
}

/** Lets pending promises, timers of 0 ms and Vue's re-render queue run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await nextTick()
  await new Promise((r) => setTimeout(r, 0))
  for (let i = 0; i < 5; i++) await nextTick()
}

/** The buttons under `root` whose text (trimmed) is `text`, or matches it (a sort header's label with its arrow). */
export const buttons = (root: ParentNode, text: string | RegExp): HTMLButtonElement[] =>
  [...root.querySelectorAll('button')].filter((b) => {
    const t = b.textContent?.trim() ?? ''
    return typeof text === 'string' ? t === text : text.test(t)
  })

/** The first button under `root` whose text is (or matches) `text`; a test without one fails naming it. */
export function button(root: ParentNode, text: string | RegExp): HTMLButtonElement {
  const b = buttons(root, text)[0]
  if (!b) throw new Error(`no button "${String(text)}"`)
  return b
}

/** happy-dom has no canvas: give uPlot a 2D context whose drawing calls do nothing. */
export function stubCanvas(): void {
  const ctx2d = new Proxy(
    {},
    {
      get: (_t, prop) =>
        prop === 'measureText' ? () => ({ width: 0 }) : prop === 'canvas' ? undefined : () => undefined,
      set: () => true,
    },
  )
  HTMLCanvasElement.prototype.getContext = (() => ctx2d) as unknown as HTMLCanvasElement['getContext']
  ;(globalThis as { Path2D?: unknown }).Path2D ??= class {
    moveTo(): void {}
    lineTo(): void {}
    rect(): void {}
    arc(): void {}
    closePath(): void {}
    bezierCurveTo(): void {}
    addPath(): void {}
  }
}
