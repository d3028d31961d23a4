import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { useApi, BackendError } from '../api'
import { useSessionStore } from './session'

/** Settings edits: drafts per name, saved together, then the configuration is re-read. */
export const useSettingsStore = defineStore('settings', () => {
  const drafts = ref<Record<string, string>>({})
  const saving = ref(false)
  const error = ref<string | null>(null)
  const notice = ref<string | null>(null)
  const dirty = computed(() => Object.keys(drafts.value).length > 0)

  function edit(name: string, value: string): void {
    drafts.value = { ...drafts.value, [name]: value }
  }

  function discard(): void {
    drafts.value = {}
    error.value = null
  }

  async function save(): Promise<void> {
    saving.value = true
    error.value = null
    notice.value = null
    try {
      const res = await useApi().call('saveSettings', { values: drafts.value })
      drafts.value = {}
      notice.value = res.restart_required
        ? `Saved ${res.saved.join(', ')}. Restart Tandem for the change to take effect.`
        : 'Nothing to save.'
      await useSessionStore().refresh()
    } catch (err) {
      error.value = err instanceof BackendError ? err.message : String(err)
    } finally {
      saving.value = false
    }
  }

  return { drafts, saving, error, notice, dirty, edit, discard, save }
})
