// @vitest-environment happy-dom
import { createApp, h } from 'vue'
import { afterEach, describe, expect, it } from 'vitest'
import type { ValidationResult as Result } from '../../../src-main/contract/models'
import ValidationResult from '../../../src-renderer/components/models/ValidationResult.vue'
import { flush } from './mount'

let unmount: (() => void) | null = null
afterEach(() => {
  unmount?.()
  document.body.innerHTML = ''
})

async function render(result: Result): Promise<string> {
  const el = document.createElement('div')
  document.body.appendChild(el)
  const app = createApp({ render: () => h(ValidationResult, { result }) })
  app.mount(el)
  unmount = () => app.unmount()
  await flush()
  return el.textContent ?? ''
}

const base = { cmd_args: [], launch_cmd: '', parser: null }

describe('the validation verdict as shown', () => {
  it('a validation that could not run says so, not "rejected"', async () => {
    const text = await render({
      ...base,
      ok: null,
      stage: 'mods',
      error: 'the mod mods/x failed in the validation container',
    })
    expect(text).toContain('not checked')
    expect(text).toContain('mods/x failed')
    expect(text).not.toContain('rejected')
  })
  it('a parser refusal stays a rejection', async () => {
    expect(await render({ ...base, ok: false, stage: 'parser', error: 'unrecognized arguments' })).toContain('rejected')
  })
})
