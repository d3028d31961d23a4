// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import SettingsView from '../../../src-renderer/views/SettingsView.vue'
import { flush, mountWith, unmountAll } from './mount'

const setting = (over: Record<string, unknown>) => ({
  value: '',
  source: 'default',
  editable: true,
  secret: false,
  kind: 'int',
  description: 'd',
  help: 'One line of help',
  range: null,
  locked_reason: null,
  pending: null,
  ...over,
})

function fakeApi(calls: { method: string; input: unknown }[]): BackendApi {
  let saved: string | null = null
  let applied = false
  const config = () => ({
    name: 'Tandem',
    version: '1',
    chat_ui_url: null,
    public_url: null,
    data_dir: '/data',
    roles: {},
    warnings: [],
    settings: [
      setting({
        name: 'SWAP_HOLD_S',
        label: 'Hold requests during a swap (seconds)',
        group: 'services',
        value: applied ? (saved ?? '600') : '600',
        source: applied ? 'file' : 'default',
        range: [0, 86400],
        pending: applied ? null : saved,
      }),
      setting({
        name: 'PORT',
        label: 'HTTP port',
        group: 'advanced',
        value: '9999',
        source: 'environment',
        editable: false,
        locked_reason: 'Set by the environment variable PORT where Tandem is started.',
      }),
      setting({ name: 'NEW_THING', label: 'New thing', group: 'mystery' }),
      setting({ name: 'ASR_PORT', label: 'asr port', help: 'asr HTTP port', group: 'services' }),
    ],
  })
  return {
    transport: 'http',
    call: (async (method: string, input: { values?: Record<string, string> }) => {
      calls.push({ method, input })
      if (method === 'session') return { authenticated: true }
      if (method === 'getConfig') return config()
      if (method === 'getSshPublicKey') throw new Error('no key in this test')
      if (method === 'licAdminValidationRecording') throw new Error('licensing is not part of this test')
      if (method === 'checkSettings') {
        const v = input.values?.SWAP_HOLD_S
        return {
          errors:
            v !== undefined && !/^\d+$/.test(v)
              ? [{ name: 'SWAP_HOLD_S', message: 'must be a whole number between 0 and 86400' }]
              : [],
        }
      }
      if (method === 'saveSettings') {
        saved = input.values?.SWAP_HOLD_S ?? null
        return { saved: ['SWAP_HOLD_S'], restart_required: true }
      }
      if (method === 'restartServices') {
        applied = true
        return {
          restarted: true,
          process_restart_needed: ['PORT'],
          process_restart_hint: 'PORT applies when the process starts again.',
        }
      }
      throw new Error(`${method} is not part of this test`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

afterEach(unmountAll)

async function mount(calls: { method: string; input: unknown }[]): Promise<HTMLElement> {
  const el = await mountWith(SettingsView, fakeApi(calls))
  const { useSessionStore } = await import('../../../src-renderer/stores/session')
  await useSessionStore().refresh()
  await flush()
  return el
}

const type = async (input: HTMLInputElement, value: string): Promise<void> => {
  input.value = value
  input.dispatchEvent(new Event('input'))
  await flush()
}

describe('Settings view', () => {
  it('groups by purpose (unknown groups last), with label, help, variable name and a locked reason', async () => {
    const el = await mount([])
    const titles = [...el.querySelectorAll('.settings-group h2')].map((h) => h.textContent)
    expect(titles).toEqual(['Services', 'Advanced', 'Other'])
    const hold = el.querySelector('[data-testid="setting-SWAP_HOLD_S"]')!
    expect(hold.textContent).toContain('Hold requests during a swap (seconds)')
    expect(hold.querySelector('code.setting-var')?.textContent).toBe('SWAP_HOLD_S')
    expect(hold.textContent).toContain('One line of help')
    const port = el.querySelector('[data-testid="setting-PORT"]')!
    expect(port.querySelector('input')?.disabled).toBe(true)
    expect(port.querySelector('[data-testid="locked-reason"]')?.textContent).toContain('environment variable PORT')
  })

  it('explains a bad value under its field, then saves and offers Restart to apply', async () => {
    const calls: { method: string; input: unknown }[] = []
    const el = await mount(calls)
    const hold = el.querySelector('[data-testid="setting-SWAP_HOLD_S"]')!
    const input = hold.querySelector('input')!
    await type(input, 'soon')
    expect(hold.querySelector('[data-testid="field-error"]')?.textContent?.trim()).toBe(
      'Hold requests during a swap (seconds) must be a whole number between 0 and 86400',
    )
    const save = el.querySelector<HTMLButtonElement>('[data-testid="settings-save"]')!
    expect(save.disabled).toBe(true)

    await type(input, '120')
    expect(hold.querySelector('[data-testid="field-error"]')).toBeNull()
    expect(el.querySelector('[data-testid="change"]')?.textContent).toBe(
      'Hold requests during a swap (seconds): 600 → 120',
    )
    save.click()
    await flush()
    expect(calls.find((c) => c.method === 'saveSettings')?.input).toEqual({ values: { SWAP_HOLD_S: '120' } })
    expect(hold.querySelector('[data-testid="pending"]')).not.toBeNull()
    expect(input.value).toBe('120')
    expect(el.querySelector('[data-testid="save-bar"]')?.textContent).toContain('1 saved setting waits for a restart.')
    expect(el.querySelector('[data-testid="settings-notice"]')?.textContent?.trim()).toBe('Saved 1 setting.')

    el.querySelector<HTMLButtonElement>('[data-testid="settings-restart"]')!.click()
    await flush()
    expect(el.querySelector('[data-testid="settings-notice"]')?.textContent).toContain('Services restarted')
    expect(el.querySelector('[data-testid="restart-hint"]')?.textContent).toContain('PORT applies')
    expect(hold.querySelector('[data-testid="pending"]')).toBeNull()
    expect(input.value).toBe('120')
  })

  it('shows one label per field: a help line that restates the label is left out', async () => {
    const el = await mount([])
    const asr = el.querySelector('[data-testid="setting-ASR_PORT"]')!
    expect(asr.querySelectorAll('label')).toHaveLength(1)
    expect(asr.querySelector('.setting-help')).toBeNull()
    expect(asr.querySelector('code.setting-var')?.textContent).toBe('ASR_PORT')
    expect(el.querySelector('[data-testid="setting-SWAP_HOLD_S"] .setting-help')?.textContent).toContain(
      'One line of help',
    )
  })

  it('folds groups into sections, and a section with an invalid or unsaved field opens itself', async () => {
    const el = await mount([])
    const group = el.querySelector<HTMLDetailsElement>('[data-testid="settings-group-services"]')!
    expect(group.tagName).toBe('DETAILS')
    group.open = false
    group.dispatchEvent(new Event('toggle'))
    await flush()
    expect(group.open).toBe(false)
    await type(group.querySelector<HTMLInputElement>('[data-testid="setting-SWAP_HOLD_S"] input')!, 'soon')
    expect(group.open).toBe(true)
  })

  it('the Nodes group counts the configured nodes; saving two settings says "2 settings"', async () => {
    let saved = false
    // Saved values wait for a restart: the bar stays, with the notice.
    const nodeSetting = (name: string) =>
      setting({
        name,
        label: name,
        group: 'nodes',
        kind: 'string',
        value: 'x',
        source: 'file',
        pending: saved ? 'y' : null,
      })
    const api: BackendApi = {
      transport: 'http',
      call: (async (method: string) => {
        if (method === 'session') return { authenticated: true }
        if (method === 'getConfig')
          return {
            name: 'Tandem',
            version: '1',
            chat_ui_url: null,
            public_url: null,
            data_dir: '/data',
            nodes: ['node1', 'node2', 'node3', 'node4'],
            roles: {},
            warnings: [],
            settings: [nodeSetting('NODE1_HOST'), nodeSetting('NODES')],
          }
        if (method === 'checkSettings') return { errors: [] }
        if (method === 'saveSettings') {
          saved = true
          return { saved: ['NODE1_HOST', 'NODES'], restart_required: true }
        }
        throw new Error(`${method} is not part of this test`)
      }) as BackendApi['call'],
      subscribe: () => () => undefined,
    }
    const el = await mountWith(SettingsView, api)
    const { useSessionStore } = await import('../../../src-renderer/stores/session')
    await useSessionStore().refresh()
    await flush()
    const nodes = el.querySelector('#settings-group-nodes')!
    expect(nodes.querySelector('.group-blurb')?.textContent).toBe(
      'The 4 machines Tandem reaches over SSH: node1, node2, node3, node4.',
    )
    expect(el.textContent).not.toContain('two machines')
    for (const name of ['NODE1_HOST', 'NODES'])
      await type(el.querySelector<HTMLInputElement>(`[data-testid="setting-${name}"] input`)!, 'y')
    el.querySelector<HTMLButtonElement>('[data-testid="settings-save"]')!.click()
    await flush()
    expect(el.querySelector('[data-testid="settings-notice"]')?.textContent?.trim()).toBe('Saved 2 settings.')
  })
})
