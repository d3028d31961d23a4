// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import SpeechPatchesPanel from '../../../src-renderer/components/services/SpeechPatchesPanel.vue'
import { button, flush, mountWith, unmountAll } from './mount'

const H = (c: string): string => c.repeat(64)

function status(over: Partial<OutputOf<'getSpeechModels'>> = {}): OutputOf<'getSpeechModels'> {
  return {
    container: 'asr',
    files: [
      {
        name: 'diarize_logic.py',
        path: '/app/diarize_logic.py',
        local_sha256: H('a'),
        container_sha256: null,
        status: 'missing',
      },
      {
        name: 'diarizer.py',
        path: '/app/diarizer.py',
        local_sha256: H('b'),
        container_sha256: H('c'),
        status: 'drift',
      },
      {
        name: 'asr_app.py',
        path: '/app/asr_app.py',
        local_sha256: H('d'),
        container_sha256: H('d'),
        status: 'in_sync',
      },
    ],
    model: { ready: true, name: 'sim/parakeet', detail: null },
    checked_at: 1,
    error: null,
    ...over,
  }
}

function fakeApi(reapply: OutputOf<'reapplySpeechModels'>): { api: BackendApi; calls: string[] } {
  const calls: string[] = []
  let synced = false
  const api = {
    transport: 'http',
    call: async (method: string) => {
      calls.push(method)
      if (method === 'getSpeechModels')
        return synced
          ? status({
              files: status().files.map((f) => ({ ...f, container_sha256: f.local_sha256, status: 'in_sync' })),
            })
          : status()
      if (method === 'reapplySpeechModels') {
        synced = reapply.ok
        return reapply
      }
      if (method === 'restartSpeechModels') return { ok: true, steps: [] }
      throw new Error(`unexpected ${method}`)
    },
    subscribe: () => () => undefined,
  } as unknown as BackendApi
  return { api, calls }
}

describe('Speech patches panel', () => {
  afterEach(() => {
    unmountAll()
  })

  it('shows each overlay with its status and the model readiness', async () => {
    const { api } = fakeApi({ ok: true, steps: [] })
    const el = await mountWith(SpeechPatchesPanel, api)
    const rows = [...el.querySelectorAll('tbody tr')].map((r) => r.textContent ?? '')
    expect(rows[0]).toContain('diarize_logic.py')
    expect(rows[0]).toContain('not applied')
    expect(rows[1]).toContain('changed')
    expect(rows[2]).toContain('in sync')
    expect(el.textContent).toContain(
      '1 of 3 overlays differ from the shipped ones in the asr container: Reapply patches puts the shipped ones back.',
    )
    // A changed copy is a warning, a copy not applied yet neutral: nothing here failed.
    expect(el.querySelectorAll('tbody .badge.warn')).toHaveLength(1)
    expect(el.querySelectorAll('.badge.bad, .error')).toHaveLength(0)
    expect(el.querySelector('.model')?.textContent).toContain('ready')
  })

  it('reapply asks first, then shows its steps and the fresh status', async () => {
    const { api, calls } = fakeApi({
      ok: true,
      steps: [
        { step: 'copy diarizer.py', ok: true, detail: '100 bytes' },
        { step: 'wait for health', ok: true, detail: 'healthy after 3 s' },
      ],
    })
    const el = await mountWith(SpeechPatchesPanel, api)
    window.confirm = () => false
    button(el, /Reapply/).click()
    await flush()
    expect(calls).not.toContain('reapplySpeechModels')

    window.confirm = () => true
    button(el, /Reapply/).click()
    await flush()
    expect(calls).toContain('reapplySpeechModels')
    expect(el.querySelector('.steps')?.textContent).toContain('healthy after 3 s')
    expect(el.textContent).toContain('All overlays in sync')
  })

  it('a reapply stopped by a syntax error shows the failing step and its output', async () => {
    const { api } = fakeApi({
      ok: false,
      steps: [
        { step: 'check Python syntax', ok: false, detail: 'SyntaxError: invalid syntax (/app/asr_app.py, line 9)' },
      ],
    })
    const el = await mountWith(SpeechPatchesPanel, api)
    window.confirm = () => true
    button(el, /Reapply/).click()
    await flush()
    expect(el.querySelector('.steps')?.textContent).toContain('stopped')
    expect(el.querySelector('.steps pre')?.textContent).toContain('SyntaxError')
  })

  it('overlays not applied yet read neutral, with what to do; Restart asr is no alarm', async () => {
    const files = status().files.map((f) => ({ ...f, container_sha256: null, status: 'missing' as const }))
    const api = {
      transport: 'http',
      call: async () => status({ files }),
      subscribe: () => () => undefined,
    } as unknown as BackendApi
    const el = await mountWith(SpeechPatchesPanel, api)
    expect(el.querySelector('[data-testid="patches-summary"]')?.textContent?.trim()).toBe(
      '3 of 3 overlays not applied yet: Reapply patches copies the shipped ones into the asr container and restarts it.',
    )
    expect([...el.querySelectorAll('tbody .badge')].map((b) => b.className)).toEqual(files.map(() => 'badge muted'))
    expect(el.querySelectorAll('.badge.bad, .error, [role="alert"], .danger')).toHaveLength(0)
    expect(button(el, /Restart asr/).className).toBe('button')
  })

  it('says to install asr when there is no asr container to patch', async () => {
    const files = status().files.map((f) => ({ ...f, container_sha256: null, status: 'missing' as const }))
    const api = {
      transport: 'http',
      call: async () => status({ files, error: 'No such container: asr' }),
      subscribe: () => () => undefined,
    } as unknown as BackendApi
    const el = await mountWith(SpeechPatchesPanel, api)
    expect(el.textContent).not.toContain('3 of 3')
    expect(el.querySelector('[data-testid="patches-summary"]')?.textContent?.trim()).toBe(
      'The asr container is not there to patch yet: install or start asr (see Services above), then Check again.',
    )
    // Not installed yet is a state to set up, not a failure: the reason reads neutral.
    expect(el.textContent).toContain('Container asr: No such container: asr')
    expect(el.querySelectorAll('.error, [role="alert"]')).toHaveLength(0)
  })
})
