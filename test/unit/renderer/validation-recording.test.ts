// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import ValidationRecording from '../../../src-renderer/components/licensing/ValidationRecording.vue'
import { mountWith, unmountAll } from './mount'

afterEach(unmountAll)

function api(answer: () => unknown): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string) => {
      if (method !== 'licAdminValidationRecording') throw new Error(`unexpected ${method}`)
      return answer()
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

describe('Settings, Licensing: the validation log’s recording (issue 42 #4)', () => {
  it('says calls are not recorded while the disk is full, and how many were lost', async () => {
    const el = await mountWith(
      ValidationRecording,
      api(() => ({ recording: false, unrecorded_calls: 321, unrecorded_since: 1, failing_since: 1 })),
    )
    expect(el.querySelector('.badge.bad')?.textContent).toBe('not recording')
    expect(el.querySelector('[role=alert]')?.textContent).toMatch(/have not been written since/)
    expect(el.querySelector('[data-testid=unrecorded]')?.textContent).toMatch(/321 validation calls were not recorded/)
  })

  it('says every call was recorded when none was lost, and shows nothing when licensing does not answer', async () => {
    const ok = await mountWith(
      ValidationRecording,
      api(() => ({ recording: true, unrecorded_calls: 0, unrecorded_since: null, failing_since: null })),
    )
    expect(ok.textContent).toMatch(/Every validation call since the start was recorded/)
    const off = await mountWith(
      ValidationRecording,
      api(() => {
        throw new Error('licensing is degraded')
      }),
    )
    expect(off.querySelector('[data-testid=settings-validation-recording]')).toBeNull()
  })
})
