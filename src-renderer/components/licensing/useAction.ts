import { ref } from 'vue'
import { BackendError } from '../../api'

/** Busy flag, error and notice for one panel's actions: errors show where the action was taken. */
export function useAction() {
  const busy = ref(false)
  const error = ref('')
  const notice = ref('')
  /** True once any action has finished: empty states wait for it instead of flickering with `busy`. */
  const settled = ref(false)
  async function run<T>(fn: () => Promise<T>, done?: string): Promise<T | undefined> {
    busy.value = true
    error.value = ''
    notice.value = ''
    try {
      const out = await fn()
      if (done) notice.value = done
      return out
    } catch (err) {
      error.value = err instanceof BackendError || err instanceof Error ? err.message : String(err)
      return undefined
    } finally {
      busy.value = false
      settled.value = true
    }
  }
  return { busy, error, notice, settled, run }
}
