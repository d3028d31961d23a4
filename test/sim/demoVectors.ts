import { embed, startFakeEmbeddings } from '../fakes/embeddings'
import { startFakeQdrant } from '../fakes/qdrant'

/** The demo's collection: a few notes about Tandem, so a search has something to find. */
export const DEMO_COLLECTION = 'tandem-docs'
const NOTES = [
  'The gateway puts the llm, asr and tts behind one host on port 9999.',
  'A model swap stops the running llm, launches the new model and waits for it to answer.',
  'Licenses are paid in bitcoin through BTCPay or by card through Zaprite.',
  'Transcription with speakers splits a recording into who said what.',
  'The redaction gateway replaces e-mail addresses and secrets with placeholders.',
]

/**
 * The embeddings server and vector store fakes on loopback, with one seeded collection, so the
 * Gateway view's embeddings and search rows work in the demo.
 */
export async function startDemoVectors(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const [embeddings, qdrant] = await Promise.all([startFakeEmbeddings(), startFakeQdrant()])
  qdrant.collections.set(
    DEMO_COLLECTION,
    NOTES.map((text, i) => ({ id: i + 1, vector: embed(text), payload: { text } })),
  )
  return {
    env: { EMBEDDINGS_URL: embeddings.url, VECTOR_URL: qdrant.url },
    close: async () => {
      await Promise.all([embeddings.stop(), qdrant.stop()])
    },
  }
}
