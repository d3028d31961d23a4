/**
 * Who is who across a recording (issue 43 #2, #3): the diarizer labels speakers per chunk
 * (`speaker_0`… again in every chunk), each with a 192-float voice fingerprint (TitaNet). The voice
 * book matches every chunk's speakers to the voices heard so far, and to the known voices a caller
 * named, by cosine similarity of fingerprints.
 */

/**
 * Two fingerprints are the same voice at or above this cosine similarity. 0.7 is the threshold NeMo's
 * own speaker verification uses for TitaNet embeddings (`EncDecSpeakerLabelModel.verify_speakers`,
 * threshold=0.7), the model the asr overlay fingerprints with; it holds for both uses here.
 */
export const SAME_VOICE = 0.7

export interface KnownVoice {
  readonly name: string
  readonly fingerprint: readonly number[]
}

/** One chunk's speaker: its local label, fingerprint (null when the diarizer gave none) and seconds of speech. */
export interface ChunkSpeaker {
  readonly label: string
  readonly fingerprint: readonly number[] | null
  readonly seconds: number
}

interface Voice {
  readonly id: string
  readonly name: string | null
  /** Sum of the unit fingerprints heard, weighted by seconds; a known voice keeps its reference. */
  readonly sum: Float64Array
  weight: number
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0
}

function unit(v: readonly number[]): Float64Array {
  const out = Float64Array.from(v)
  const n = Math.hypot(...out)
  if (n > 0) for (let i = 0; i < out.length; i++) out[i]! /= n
  return out
}

/** `A`…`Z`, then `AA`, `AB`…: OpenAI's labels for speakers nobody named. */
export function letterLabel(n: number): string {
  let s = ''
  for (let k = n; k >= 0; k = Math.floor(k / 26) - 1) s = String.fromCharCode(65 + (k % 26)) + s
  return s
}

export type LabelStyle = 'letters' | 'numbered'

export class VoiceBook {
  private readonly voices: Voice[] = []
  private readonly labels = new Map<string, string>()
  private unnamed = 0
  private fallback: string | null = null

  constructor(
    known: readonly KnownVoice[],
    private readonly style: LabelStyle,
  ) {
    for (const k of known)
      this.voices.push({ id: `v${this.voices.length}`, name: k.name, sum: unit([...k.fingerprint]), weight: 0 })
  }

  /**
   * Gives each of a chunk's speakers a voice id: the most similar pairs first (at most one chunk
   * speaker per voice: the diarizer already told them apart), each at or above SAME_VOICE; a
   * speaker that matches nothing is a new voice.
   */
  match(speakers: readonly ChunkSpeaker[]): Map<string, string> {
    const pairs: { s: number; v: number; sim: number }[] = []
    speakers.forEach((sp, s) => {
      if (!sp.fingerprint) return
      this.voices.forEach((v, vi) => {
        const sim = cosine(sp.fingerprint!, v.sum)
        if (sim >= SAME_VOICE) pairs.push({ s, v: vi, sim })
      })
    })
    pairs.sort((a, b) => b.sim - a.sim || a.s - b.s || a.v - b.v)
    const out = new Map<string, string>()
    const taken = new Set<number>()
    for (const p of pairs) {
      const label = speakers[p.s]!.label
      if (out.has(label) || taken.has(p.v)) continue
      taken.add(p.v)
      out.set(label, this.voices[p.v]!.id)
      this.hear(this.voices[p.v]!, speakers[p.s]!)
    }
    for (const sp of speakers) {
      if (out.has(sp.label)) continue
      const voice: Voice = {
        id: `v${this.voices.length}`,
        name: null,
        sum: new Float64Array(sp.fingerprint?.length ?? 192),
        weight: 0,
      }
      this.voices.push(voice)
      this.hear(voice, sp)
      out.set(sp.label, voice.id)
    }
    return out
  }

  /** The voice of words no turn covers: one for the whole recording. */
  fallbackVoice(): string {
    if (this.fallback === null) this.fallback = this.match([{ label: '', fingerprint: null, seconds: 0 }]).get('')!
    return this.fallback
  }

  private hear(voice: Voice, sp: ChunkSpeaker): void {
    if (voice.name !== null || !sp.fingerprint) return
    const u = unit([...sp.fingerprint])
    const w = Math.max(sp.seconds, 0.1)
    for (let i = 0; i < voice.sum.length; i++) voice.sum[i]! += u[i]! * w
    voice.weight += w
  }

  /** A voice's label, fixed at its first speech: the known name, else the next letter (or `Speaker_<n>`). */
  labelOf(id: string): string {
    const had = this.labels.get(id)
    if (had !== undefined) return had
    const name = this.voices.find((v) => v.id === id)?.name ?? null
    const label = name ?? (this.style === 'letters' ? letterLabel(this.unnamed) : `Speaker_${this.unnamed + 1}`)
    if (name === null) this.unnamed++
    this.labels.set(id, label)
    return label
  }
}
