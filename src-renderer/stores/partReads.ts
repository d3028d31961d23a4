import { computed, reactive } from 'vue'

/** A store's read problems per part (`catalog`, `disk`, `swap`…), joined into one line for the view. */
export function usePartReads<Part extends string>(parts: readonly Part[]) {
  const problems = reactive(Object.fromEntries(parts.map((p) => [p, null]))) as Record<Part, string | null>
  const error = computed(() => {
    const bad = parts.filter((p) => problems[p] !== null)
    return bad.length > 0 ? bad.map((p) => `${p}: ${problems[p]}`).join('; ') : null
  })
  /** Reads one part into `into`; its failure shows in `error` under the part's name until a read succeeds. */
  const reader =
    <T>(part: Part, read: () => Promise<T>, into: { value: T | null }) =>
    async (): Promise<void> => {
      try {
        into.value = await read()
        problems[part] = null
      } catch (err) {
        problems[part] = (err as Error).message
      }
    }
  return { problems, error, reader }
}
