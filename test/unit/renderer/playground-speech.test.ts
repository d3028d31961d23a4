// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi } from '../../../src-renderer/api'
import { button, flush, mountWith, unmountAll } from './mount'
import PlaygroundSpeech from '../../../src-renderer/components/gateway/PlaygroundSpeech.vue'

/** Issue 8: the Gateway view's voice list shows the OpenAI voice names and what each stands for. */
const answers: Record<string, unknown> = {
  gatewayVoices: {
    voices: [
      { id: 'Multivoice.EN-US.Aria', language: 'en-US' },
      { id: 'Multivoice.DE-DE.Lena', language: 'de-DE' },
    ],
    aliases: [
      { alias: 'echo', voice: 'Multivoice.DE-DE.Lena', source: 'setting' },
      { alias: 'alloy', voice: 'Multivoice.EN-US.Aria', source: 'default' },
    ],
    error: null,
  },
  playgroundSpeech: { audio_base64: btoa('RIFF0000WAVE'), content_type: 'audio/wav', bytes: 12, latency_ms: 5 },
}

function fakeApi(calls: { method: string; input: unknown }[]): BackendApi {
  return {
    transport: 'ipc',
    call: (async (method: string, input: unknown) => {
      calls.push({ method, input })
      return answers[method]
    }) as BackendApi['call'],
    subscribe: (() => () => undefined) as BackendApi['subscribe'],
  }
}

afterEach(unmountAll)

describe('speech playground', () => {
  it('offers the aliases beside the voices, filtered by language, and speaks with one', async () => {
    URL.createObjectURL = () => 'blob:wav'
    URL.revokeObjectURL = () => undefined
    const calls: { method: string; input: unknown }[] = []
    const el = await mountWith(PlaygroundSpeech, fakeApi(calls))
    const [language, voice] = [...el.querySelectorAll('select')] as HTMLSelectElement[]
    const aliasGroup = voice!.querySelector('optgroup[label="OpenAI names"]')!
    expect([...aliasGroup.querySelectorAll('option')].map((o) => o.textContent)).toEqual([
      'echo → Multivoice.DE-DE.Lena',
      'alloy → Multivoice.EN-US.Aria',
    ])
    language!.value = 'de-DE'
    language!.dispatchEvent(new Event('change'))
    await flush()
    expect([...voice!.options].map((o) => o.value)).toEqual(['echo', 'Multivoice.DE-DE.Lena'])
    voice!.value = 'echo'
    voice!.dispatchEvent(new Event('change'))
    await flush()
    button(el, 'Speak').click()
    await flush()
    expect(calls.find((c) => c.method === 'playgroundSpeech')!.input).toMatchObject({ voice: 'echo' })
  })
})
