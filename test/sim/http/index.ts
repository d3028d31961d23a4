/** The simulated inference services (llm, asr, tts) on loopback, for tests, the sim cluster and the demo. */
export { startFakeLlm, type FakeLlm, type FakeLlmOptions } from './llm'
export {
  startFakeAsr,
  scriptedWords,
  fingerprint,
  heardFingerprint,
  TONE_VOICES_HZ,
  type FakeAsr,
  type FakeAsrOptions,
} from './asr'
export { startFakeTts, simVoices, type FakeTts, type FakeTtsOptions } from './tts'
export {
  makeWav,
  toneWav,
  type ToneTurn,
  type Fault,
  type FaultInput,
  type FakeServer,
  type RecordedRequest,
} from './common'
