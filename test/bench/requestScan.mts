// Request scan bench (issue 15): what reading a relayed chat request costs as its conversation
// grows: `readRelayRequest` (the relay's bounded scan, gateway/jsonScan.ts) against JSON.parse of
// the same bytes, for bodies of 1 KB to 4 MB. The scan runs on the event loop the whole daemon
// shares, so its ns per byte is what a long conversation costs every other client.
//
// Measured twice: first with V8's typed-array fast path intact, then after an ArrayBuffer has been
// detached (as a web stream's byte queue does: the global fetch reads every answer body through
// one), which adds a check to every typed-array read in the process for the rest of its life.
// Prints figures, asserts nothing. Run: npx tsx test/bench/requestScan.mts
import { readRelayRequest } from '../../src-main/gateway/wire'

const SIZES = [1_000, 30_000, 300_000, 4_000_000]
/** Prose: paragraphs of about 400 characters, so an escape (the line breaks) about every 400 bytes. */
const PROSE =
  'The quick brown fox jumps over the lazy dog while the operator watches the cluster swap its model, ' +
  'and the gateway keeps every client answered in the meantime; nothing here needs an escape at all. ' +
  'A long conversation is mostly text like this, which is why the scan reads runs of it a word at a time. ' +
  'Accented letters such as é and ü are plain bytes to it, like any other inside a string.\n\n'
/** Code: short lines with quotes and backslashes, so an escape every few dozen bytes. */
const CODE =
  'function greet(name) {\n  const msg = "Hello, " + name + "!"\n  console.log(msg.replace(/\\s+/g, " "))\n' +
  '  return { ok: true, path: "C:\\\\temp\\\\out.txt" }\n}\n'

/** A chat request of about `bytes` bytes, its turns `turn` repeated, as an agent or IDE sends them. */
function chatBody(bytes: number, turn: string): Buffer {
  const messages: { role: string; content: string }[] = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const content = turn.repeat(1 + (i % 12))
    messages.push({ role: i % 2 === 0 ? 'user' : 'assistant', content })
    size += content.length + 32
  }
  return Buffer.from(JSON.stringify({ model: 'sim/Qwen3-8B-Instruct', messages, stream: true }))
}

/** Median ns per call of `fn` over rounds of about 50 ms each, after one round to warm up. */
function nsPerCall(fn: () => unknown): number {
  const t0 = performance.now()
  fn()
  const once = Math.max(performance.now() - t0, 0.001)
  const calls = Math.max(1, Math.min(100_000, Math.round(50 / once)))
  const rounds: number[] = []
  for (let r = 0; r < 6; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) fn()
    if (r > 0) rounds.push(Number(process.hrtime.bigint() - start) / calls)
  }
  rounds.sort((a, b) => a - b)
  return rounds[rounds.length >> 1]!
}

function table(state: string, bodies: { kind: string; body: Buffer }[]): void {
  console.log(`\n${state}`)
  console.log('| body | readRelayRequest µs | ns/byte | JSON.parse µs | ns/byte |')
  console.log('|---|---:|---:|---:|---:|')
  for (const { kind, body } of bodies) {
    if (!readRelayRequest(body).stream) throw new Error('the bench body did not read as a stream request')
    const scan = nsPerCall(() => readRelayRequest(body))
    const parse = nsPerCall(() => JSON.parse(body.toString('utf8')) as unknown)
    const kb = `${kind}, ${(body.length / 1000).toFixed(0)} KB`
    console.log(
      `| ${kb} | ${(scan / 1000).toFixed(1)} | ${(scan / body.length).toFixed(2)} | ${(parse / 1000).toFixed(1)} | ${(parse / body.length).toFixed(2)} |`,
    )
  }
}

const bodies = [PROSE, CODE].flatMap((turn) =>
  SIZES.map((size) => ({ kind: turn === PROSE ? 'prose' : 'code', body: chatBody(size, turn) })),
)
console.log(`Node ${process.version}; median of 5 rounds of about 50 ms per cell`)
table('Typed-array reads unchecked (no ArrayBuffer detached in this process):', bodies)
const detached = new ArrayBuffer(8)
structuredClone(detached, { transfer: [detached] })
table('After one ArrayBuffer was detached (what a fetch answer body does):', bodies)
