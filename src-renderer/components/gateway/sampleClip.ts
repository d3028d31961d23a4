/**
 * A sample clip for the transcription playground: a 6-second generated test tone, not speech.
 * Two voice-like tones (a low and a high pitch with a few harmonics) take turns in syllable-long
 * bursts, so a clip has the shape of a short dialogue: a real speech model finds no words in it,
 * and the demo's simulated asr answers it with its scripted dialogue. 16-bit mono PCM WAV, 16 kHz.
 */
const RATE = 16_000
const SECONDS = 6

/** The pitch of whoever is "speaking" at time t (s): turns of about 1.5 s, with short pauses. */
function pitchAt(t: number): number | null {
  const turn = Math.floor(t / 1.5)
  const inTurn = t - turn * 1.5
  if (inTurn > 1.3) return null
  return turn % 2 === 0 ? 120 : 210
}

export function sampleClipWav(): Uint8Array {
  const samples = RATE * SECONDS
  const buf = new ArrayBuffer(44 + samples * 2)
  const v = new DataView(buf)
  const ascii = (at: number, s: string): void => [...s].forEach((c, i) => v.setUint8(at + i, c.charCodeAt(0)))
  ascii(0, 'RIFF')
  v.setUint32(4, 36 + samples * 2, true)
  ascii(8, 'WAVE')
  ascii(12, 'fmt ')
  v.setUint32(16, 16, true)
  v.setUint16(20, 1, true) // PCM
  v.setUint16(22, 1, true) // mono
  v.setUint32(24, RATE, true)
  v.setUint32(28, RATE * 2, true)
  v.setUint16(32, 2, true)
  v.setUint16(34, 16, true)
  ascii(36, 'data')
  v.setUint32(40, samples * 2, true)
  for (let i = 0; i < samples; i++) {
    const t = i / RATE
    const f0 = pitchAt(t)
    if (f0 === null) continue
    // Syllables: a 4 Hz rise and fall, as speech's loudness goes.
    const envelope = Math.max(0, Math.sin(Math.PI * 4 * t)) ** 2
    const tone =
      Math.sin(2 * Math.PI * f0 * t) + 0.5 * Math.sin(4 * Math.PI * f0 * t) + 0.25 * Math.sin(6 * Math.PI * f0 * t)
    v.setInt16(44 + i * 2, Math.round(6000 * envelope * tone), true)
  }
  return new Uint8Array(buf)
}
