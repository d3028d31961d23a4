// Stream meter bench (issue 15): what the usage meter costs per event of a relayed event stream
// (gateway/relay/usageMeter.ts, onSseChunk): an engine's events read one a read (tokens as they come) or
// 200 a read (a fast engine, or a slow client), with and without the `"usage":null` an
// OpenAI-style engine adds to every chunk once Tandem asks for usage, then the usage event and
// [DONE]. Prints ns per event, asserts nothing. Run: npx tsx test/bench/streamMeter.mts
import { UsageMeter } from '../../src-main/gateway/relay/usageMeter'

const EVENTS = 200

function chunkEvent(i: number, usageNull: boolean): string {
  const chunk = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1767225600,
    model: 'sim/Qwen3-8B-Instruct',
    choices: [{ index: 0, delta: { content: ` token${i}` }, logprobs: null, finish_reason: null }],
    ...(usageNull ? { usage: null } : {}),
  }
  return `data: ${JSON.stringify(chunk)}\n\n`
}

const USAGE_EVENT = `data: ${JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion.chunk',
  created: 1767225600,
  model: 'sim/Qwen3-8B-Instruct',
  choices: [],
  usage: { prompt_tokens: 9, completion_tokens: EVENTS, total_tokens: EVENTS + 9 },
})}\n\ndata: [DONE]\n\n`

/** One stream through a meter that strips the usage the client did not ask for; returns the bytes passed on. */
function meterStream(reads: readonly Buffer[]): number {
  const m = new UsageMeter(0)
  m.stripUnaskedUsage()
  let passed = 0
  for (const r of reads) passed += m.onSseChunk(r).length
  passed += m.flushSse().length
  if (m.result().completion_tokens !== EVENTS) throw new Error('the meter lost the usage event')
  return passed
}

function nsPerEvent(usageNull: boolean, perRead: number): number {
  const events = Array.from({ length: EVENTS }, (_, i) => chunkEvent(i, usageNull))
  const reads: Buffer[] = []
  for (let i = 0; i < EVENTS; i += perRead) reads.push(Buffer.from(events.slice(i, i + perRead).join('')))
  reads.push(Buffer.from(USAGE_EVENT))
  for (let i = 0; i < 300; i++) meterStream(reads)
  const rounds: number[] = []
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < 200; i++) meterStream(reads)
    rounds.push(Number(process.hrtime.bigint() - t0) / 200 / EVENTS)
  }
  rounds.sort((a, b) => a - b)
  return rounds[2]!
}

console.log(`Node ${process.version}; ${EVENTS} events a stream, median of 5 rounds of 200 streams`)
console.log('| events | one a read: ns per event | 200 a read: ns per event |')
console.log('|---|---:|---:|')
for (const usageNull of [false, true]) {
  const label = usageNull ? 'with `"usage":null` on each' : 'without'
  console.log(`| ${label} | ${nsPerEvent(usageNull, 1).toFixed(0)} | ${nsPerEvent(usageNull, EVENTS).toFixed(0)} |`)
}
