import { afterEach, describe, expect, it } from 'vitest'
import { PlacementUpstreams } from '../../../src-main/gateway/relay/placementUpstreams'
import { DEFAULT_UPSTREAM_TIMEOUTS } from '../../../src-main/gateway/relay/upstreams'
import type { PlacementRoute } from '../../../src-main/models/types'
import { FakeRouter } from '../../helpers/fakeRouter'

/** Issue 41: a model placed on several nodes goes to its least busy copy that answers. */
const copy = (id: string): PlacementRoute => ({
  id,
  baseUrl: `http://127.0.0.${id.slice(4)}:8888`,
  served: 'org/m',
  key: 'm',
})

const made: PlacementUpstreams[] = []
afterEach(() => {
  for (const p of made.splice(0)) p.destroy()
})

describe('picking a copy', () => {
  it('takes the one with the fewest requests in flight, the first of those tied', () => {
    const up = new PlacementUpstreams(new FakeRouter([]), DEFAULT_UPSTREAM_TIMEOUTS)
    made.push(up)
    const copies = [copy('node2'), copy('node3'), copy('node4')]
    expect(up.pick(copies).id).toBe('node2')
    up.begin('node2')
    expect(up.pick(copies).id).toBe('node3')
    up.begin('node3')
    up.begin('node4')
    up.begin('node4')
    expect(up.pick(copies).id).toBe('node2')
    up.begin('node2')
    up.end('node3')
    expect(up.pick(copies).id).toBe('node3')
    // Only the copies offered count: a busy one that is not offered is not picked.
    expect(up.pick([copy('node4')]).id).toBe('node4')
  })

  it('names the engine by its head in errors', () => {
    const up = new PlacementUpstreams(new FakeRouter([]), DEFAULT_UPSTREAM_TIMEOUTS)
    made.push(up)
    expect(up.upstream({ ...copy('node3'), id: 'node3+node4' }).label).toBe('llm on node3')
  })
})
