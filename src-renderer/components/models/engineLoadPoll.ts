import { onBeforeUnmount, onMounted, reactive } from 'vue'
import { useApi, type OutputOf } from '../../api'

/**
 * Each placement engine's own load (listEngineLoad), read once for every strip on the page and
 * read again at the daemon's scrape interval while one is shown.
 */
export type EngineLoadRow = OutputOf<'listEngineLoad'>['placements'][number]

const state = reactive<{ rows: EngineLoadRow[]; error: string | null }>({ rows: [], error: null })
let users = 0
let timer: ReturnType<typeof setTimeout> | null = null

async function poll(): Promise<void> {
  let nextMs = 15_000
  try {
    const view = await useApi().call('listEngineLoad', {})
    state.rows = view.placements
    state.error = null
    // Off (0): nothing more will come.
    if (view.interval_s <= 0) return
    nextMs = Math.max(5, view.interval_s) * 1000
  } catch (err) {
    state.error = (err as Error).message
  }
  if (users > 0) timer = setTimeout(() => void poll(), nextMs)
}

/** The rows, kept fresh while the calling component is mounted. */
export function useEngineLoad(): { readonly rows: EngineLoadRow[]; readonly error: string | null } {
  onMounted(() => {
    if (users++ === 0) void poll()
  })
  onBeforeUnmount(() => {
    if (--users > 0) return
    if (timer !== null) clearTimeout(timer)
    timer = null
  })
  return state
}
