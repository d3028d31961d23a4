// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import PlacementRecovery from '../../../src-renderer/components/models/PlacementRecovery.vue'
import type { Placement } from '../../../src-main/contract/placements'
import { button, buttons, flush, mountWith, unmountAll } from './mount'

/** The placement card's recovery line (issue 47): recovering, failed with Retry, pinned or its idle ttl. */

afterEach(() => unmountAll())

const base: Placement = {
  id: 'node3',
  key: 'coder',
  served: 'org/coder',
  nodes: ['node3'],
  head: 'node3',
  layout: null,
  state: 'lost',
  reason: 'the engine on node3 does not answer',
  since: null,
  memory_bytes_per_node: null,
  recovery: null,
  keep: { pinned: true, ttl_min: null },
}

function api(calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'http',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      if (method !== 'retryPlacement') throw new Error(`${method} not needed here`)
      return { id: 'node3', recovery: null }
    }) as BackendApi['call'],
    subscribe: (() => () => undefined) as BackendApi['subscribe'],
  }
}

describe('the placement recovery line', () => {
  it('says which attempt runs and when the next is due, with no Retry while it recovers', async () => {
    const recovery = {
      state: 'recovering' as const,
      attempt: 2,
      of: 3,
      next_at: 0,
      error: 'x',
      text: 'recovering (attempt 2 of 3, next at 00:02:00 UTC)',
    }
    const el = await mountWith(PlacementRecovery, api([]), { placement: { ...base, recovery } })
    expect(el.querySelector('[data-test="placement-recovery-text"]')?.textContent).toBe(
      'recovering (attempt 2 of 3, next at 00:02:00 UTC)',
    )
    expect(buttons(el, 'Retry')).toHaveLength(0)
    expect(el.querySelector('[data-test="placement-keep"]')?.textContent).toBe(
      'pinned: never unloaded, always recovered',
    )
  })

  it('past the limit reads failed with the last error, and Retry asks the daemon for that placement', async () => {
    const calls: { method: string; input: unknown }[] = []
    const recovery = {
      state: 'failed' as const,
      attempt: 3,
      of: 3,
      next_at: null,
      error: 'the engine failed to load org/coder',
      text: 'failed: the engine failed to load org/coder',
    }
    const el = await mountWith(PlacementRecovery, api(calls), {
      placement: { ...base, recovery, keep: { pinned: false, ttl_min: 30 } },
    })
    expect(el.querySelector('[data-test="placement-recovery-text"]')?.textContent).toBe(
      'failed: the engine failed to load org/coder',
    )
    expect(el.querySelector('[data-test="placement-keep"]')?.textContent).toBe(
      'unloaded after 30 min without a request',
    )
    button(el, 'Retry').click()
    await flush()
    expect(calls).toEqual([{ method: 'retryPlacement', input: { id: 'node3' } }])
    expect(el.textContent).toContain('Retrying…')
  })
})
