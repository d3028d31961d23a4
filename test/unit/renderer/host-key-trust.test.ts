// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import { defineComponent, h, ref } from 'vue'
import type { BackendApi } from '../../../src-renderer/api'
import HostKeyTrust from '../../../src-renderer/components/cluster/HostKeyTrust.vue'
import { flush, mountWith, unmountAll } from './mount'

afterEach(unmountAll)

const FP = 'SHA256:' + 'A'.repeat(43)
const OLD = 'SHA256:' + 'B'.repeat(43)

function fakeApi(calls: { method: string; input: unknown }[], pending: unknown[], required: boolean): BackendApi {
  let list = pending
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method === 'listPendingHostKeys')
        return {
          confirmation_required: required,
          kept_as: required ? '/data/known_hosts.json.corrupt' : null,
          pending: list,
        }
      if (method === 'trustHostKey') {
        list = []
        return { trusted: true, name: '[10.0.0.11]:22', fingerprint: FP }
      }
      if (method === 'getHardware') return null
      throw new Error(`unexpected ${method}`)
    }) as BackendApi['call'],
    subscribe: () => () => undefined,
  }
}

const wrapper = defineComponent({ setup: () => () => h(HostKeyTrust, { hardware: ref(null).value }) })

describe('host key trust panel', () => {
  it('after an unreadable known_hosts.json, shows the presented fingerprint and trusts exactly it', async () => {
    const calls: { method: string; input: unknown }[] = []
    const pending = [
      { host: '10.0.0.11', port: 22, type: 'ssh-ed25519', fingerprint: FP, expected_fingerprint: null, seen_at: 1 },
    ]
    const el = await mountWith(wrapper, fakeApi(calls, pending, true))
    expect(el.textContent).toContain('known_hosts.json.corrupt')
    expect(el.textContent).toContain(FP)
    expect(el.textContent).toContain('ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub')
    window.confirm = () => true
    ;(el.querySelector('[data-testid="trust-10.0.0.11-22"]') as HTMLButtonElement).click()
    await flush()
    expect(calls.find((c) => c.method === 'trustHostKey')?.input).toEqual({
      host: '10.0.0.11',
      port: 22,
      fingerprint: FP,
    })
    expect(calls.some((c) => c.method === 'getHardware')).toBe(true)
    expect(el.textContent).toContain(`Trusted ${FP} for 10.0.0.11:22`)
  })

  it('a changed key says which key it replaces; cancelling the confirmation trusts nothing', async () => {
    const calls: { method: string; input: unknown }[] = []
    const pending = [
      { host: '10.0.0.12', port: 2222, type: 'ssh-rsa', fingerprint: FP, expected_fingerprint: OLD, seen_at: 1 },
    ]
    const el = await mountWith(wrapper, fakeApi(calls, pending, false))
    expect(el.textContent).toContain(OLD)
    expect(el.textContent).not.toContain('could not be read')
    window.confirm = () => false
    ;(el.querySelector('[data-testid="trust-10.0.0.12-2222"]') as HTMLButtonElement).click()
    await flush()
    expect(calls.some((c) => c.method === 'trustHostKey')).toBe(false)
  })

  it('shows nothing when no key waits for confirmation', async () => {
    const el = await mountWith(wrapper, fakeApi([], [], false))
    expect(el.querySelector('[data-testid="host-key-trust"]')).toBeNull()
  })
})
