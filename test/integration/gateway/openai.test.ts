import OpenAI, { toFile } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silenceWav, startRig, type GatewayRig } from './setup'

/** The official openai client against the gateway (issue 4, item 10). */
describe('gateway with the official openai client', () => {
  let rig: GatewayRig
  let client: OpenAI

  beforeAll(async () => {
    rig = await startRig()
    client = new OpenAI({ baseURL: `${rig.daemon.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 })
  })
  afterAll(async () => {
    await rig?.stop()
  })

  it('lists the llm model, the asr model and every tts voice, owned by their service', async () => {
    const ids: { id: string; owned_by: string }[] = []
    for await (const m of client.models.list()) ids.push({ id: m.id, owned_by: m.owned_by })
    expect(ids.filter((m) => m.owned_by === 'llm').map((m) => m.id)).toEqual(['sim/Qwen3-8B-Instruct'])
    expect(ids.filter((m) => m.owned_by === 'asr').map((m) => m.id)).toEqual([rig.asr.model])
    const voices = ids.filter((m) => m.owned_by === 'tts').map((m) => m.id)
    expect(voices.length).toBeGreaterThanOrEqual(60)
    expect(voices).toEqual(rig.tts.voices)
  })

  it('answers a chat completion whole', async () => {
    const r = await client.chat.completions.create({
      model: 'sim/Qwen3-8B-Instruct',
      messages: [{ role: 'user', content: 'hello gateway' }],
    })
    expect(r.choices[0]?.message.content).toBe('You said: hello gateway')
    expect(r.usage?.completion_tokens).toBe(4)
  })

  it('streams a chat completion chunk by chunk, ending at [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim/Qwen3-8B-Instruct',
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
    })
    const parts: string[] = []
    for await (const chunk of stream) parts.push(chunk.choices[0]?.delta?.content ?? '')
    expect(parts.filter((p) => p !== '')).toEqual(['You', ' said:', ' one', ' two', ' three'])
    const body = rig.llm.requests.at(-1)!
    expect(body.path).toBe('/v1/chat/completions')
  })

  it('forwards the body verbatim, byte for byte', async () => {
    const raw =
      '{"model":"sim/Qwen3-8B-Instruct",  "messages":[{"role":"user","content":"spacing   kept"}], "x_custom":{"a":[1,2]}}'
    const res = await fetch(`${rig.daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    })
    expect(res.status).toBe(200)
    expect(rig.llm.requests.at(-1)!.head.toString('utf8')).toBe(raw)
  })

  it('answers legacy completions, streaming and not', async () => {
    const r = await client.completions.create({ model: 'sim/Qwen3-8B-Instruct', prompt: 'abc', max_tokens: 3 })
    expect(r.choices[0]?.text).toBe('The quick brown')
    const s = await client.completions.create({
      model: 'sim/Qwen3-8B-Instruct',
      prompt: 'abc',
      max_tokens: 5,
      stream: true,
    })
    let text = ''
    for await (const c of s) text += c.choices[0]?.text ?? ''
    expect(text).toBe('The quick brown fox jumps')
  })

  it('speaks through audio.speech: WAV bytes, language derived from the voice', async () => {
    const res = await client.audio.speech.create({
      model: 'tts',
      voice: 'Multivoice.DE-DE.Lena',
      input: 'Guten Morgen',
      response_format: 'wav',
    })
    const wav = Buffer.from(await res.arrayBuffer())
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF')
    expect(wav.toString('ascii', 8, 12)).toBe('WAVE')
    const sent = rig.tts.requests.at(-1)!.head.toString('utf8')
    expect(sent).toMatch(/name="language"\r\n\r\nde-DE\r\n/)
    expect(sent).toMatch(/name="voice"\r\n\r\nMultivoice\.DE-DE\.Lena\r\n/)
  })

  it('transcribes with word and segment timestamps (repeated timestamp_granularities[] relayed)', async () => {
    const r = await client.audio.transcriptions.create({
      file: await toFile(silenceWav(12), 'meeting.wav', { type: 'audio/wav' }),
      model: 'asr',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
    })
    expect(r.text).toContain('Good morning, everyone.')
    expect(r.words?.length).toBeGreaterThan(10)
    expect(r.segments?.length).toBeGreaterThan(1)
    expect(rig.asr.forms.at(-1)!.timestamp_granularities).toEqual(['word', 'segment'])
    expect(rig.asr.forms.at(-1)!.response_format).toBe('verbose_json')
  })

  it('surfaces the streamed `error` event as an error', async () => {
    await rig.llm.setFault({ kind: 'error500', message: 'CUDA error: cudaErrorUnknown' })
    try {
      const stream = await client.chat.completions.create({
        model: 'sim/Qwen3-8B-Instruct',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      })
      const consume = async (): Promise<void> => {
        for await (const _ of stream) void _
      }
      await expect(consume()).rejects.toThrow(/cudaErrorUnknown/)
    } finally {
      await rig.llm.setFault('none')
    }
  })
})
