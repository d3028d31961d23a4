import net from 'node:net'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type TestDaemon } from '../../helpers/daemon'
import { LoopbackServer } from '../../fakes/loopback'
import type { EventStreamItem } from '../../../src-main/contract/events'

/** A port nothing listens on: SSH to it is refused at once. */
async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

/** An open SSE stream read message by message; `until` resolves with every event seen so far. */
function openEvents(d: TestDaemon, headers: Record<string, string> = {}) {
  const abort = new AbortController()
  const seen: (EventSourceMessage & { item: EventStreamItem })[] = []
  let wake: () => void = () => undefined
  const parser = createParser({
    onEvent: (m) => {
      seen.push({ ...m, item: JSON.parse(m.data) as EventStreamItem })
      wake()
    },
  })
  const response = d.admin('/api/events', { headers, signal: abort.signal })
  const reading = (async () => {
    const res = await response
    const decoder = new TextDecoder()
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }))
    } catch {
      // aborted by close()
    }
  })()
  return {
    response,
    seen,
    async until(pred: (items: EventStreamItem[]) => boolean): Promise<EventStreamItem[]> {
      while (!pred(seen.map((s) => s.item))) await new Promise<void>((r) => (wake = r))
      return seen.map((s) => s.item)
    },
    async close(): Promise<void> {
      abort.abort()
      await reading
    },
  }
}

let d: TestDaemon
let asr: LoopbackServer
let asrHealthy = true
beforeAll(async () => {
  asr = await new LoopbackServer((req) =>
    req.path === '/health'
      ? { status: asrHealthy ? 200 : 500, body: {} }
      : { status: 200, body: { data: [{ id: 'whisper-large' }] } },
  ).start()
  d = await startDaemon({
    env: {
      MONITOR_INTERVAL_S: '0',
      ASR_HOST: '127.0.0.1',
      ASR_USER: 'tester',
      ASR_SSH_PORT: String(await closedPort()),
      ASR_PORT: new URL(asr.url).port,
    },
  })
})
afterAll(async () => {
  await d.stop()
  await asr.stop()
})

describe('GET /api/events', () => {
  it('is admin-only', async () => {
    const res = await fetch(`${d.url}/api/events`)
    expect(res.status).toBe(401)
  })

  it('delivers job updates with an SSE id, and resumes after Last-Event-ID', async () => {
    const stream = openEvents(d)
    const res = await stream.response
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const rec = d.core.jobs.start('update', 'launcher', async (job) => {
      job.phase('Pulling')
    })
    const items = await stream.until((xs) => xs.some((x) => x.name === 'job.update' && x.data.state !== 'running'))
    await stream.close()
    const jobs = items.filter((x) => x.name === 'job.update')
    expect(jobs.map((x) => (x.name === 'job.update' ? x.data.phase : ''))).toEqual(['Starting', 'Pulling', 'Done'])
    expect(jobs.every((x) => x.name === 'job.update' && x.data.id === rec.id)).toBe(true)
    expect(stream.seen.map((m) => m.id)).toEqual(items.map((x) => String(x.seq)))

    // Reconnecting with the first id replays only what came after it.
    const first = items[0]!.seq
    const resumed = openEvents(d, { 'Last-Event-ID': String(first) })
    const again = await resumed.until((xs) => xs.length >= 2)
    await resumed.close()
    expect(again.slice(0, 2).map((x) => x.seq)).toEqual([first + 1, first + 2])
  })

  it('tells a client resuming from a cursor it no longer holds to re-read', async () => {
    const stream = openEvents(d, { 'Last-Event-ID': '999999' })
    const [first] = await stream.until((xs) => xs.length >= 1)
    await stream.close()
    expect(first).toMatchObject({ name: 'resync', data: { reason: 'restart' } })
  })

  it('publishes service state changes (only on change) and connectivity transitions', async () => {
    const stream = openEvents(d)
    await stream.response
    const asrState = (xs: EventStreamItem[]) =>
      xs.flatMap((x) => (x.name === 'service.state' && x.data.service === 'asr' ? [x.data] : []))

    expect((await d.admin('/api/status')).status).toBe(200)
    await stream.until((xs) => asrState(xs).length >= 1)
    // Nothing listens on the asr's SSH port: its node is unreachable, so the label is Unknown even
    // though the service answers HTTP (issue 31, finding 3).
    expect(asrState(stream.seen.map((s) => s.item))[0]).toMatchObject({
      previous: null,
      status: { label: 'Unknown', label_reason: 'node unreachable', model: 'whisper-large' },
    })

    asrHealthy = false
    await d.admin('/api/status')
    await d.admin('/api/status') // no change: nothing more for asr
    const items = await stream.until((xs) => xs.some((x) => x.name === 'connectivity.transition'))
    await stream.close()
    expect(asrState(items).map((s) => [s.previous, s.status.label, s.status.model])).toEqual([
      [null, 'Unknown', 'whisper-large'],
      ['Unknown', 'Unknown', null],
    ])
    const down = items.find((x) => x.name === 'connectivity.transition')
    expect(down).toMatchObject({ data: { subject: 'asr', kind: 'transition', state: 'down' } })
  })
})
