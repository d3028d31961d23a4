import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { useApi, BackendError, type OutputOf } from '../api'
import { useSessionStore } from './session'

export type RestartOutcome = OutputOf<'restartServices'>

/**
 * Settings edits: drafts per name, checked as they are typed (problems shown under each field),
 * saved together; then "Restart to apply" rebuilds the daemon's services with them.
 */
export const useSettingsStore = defineStore('settings', () => {
  const drafts = ref<Record<string, string>>({})
  const fieldErrors = ref<Record<string, string>>({})
  const saving = ref(false)
  const restarting = ref(false)
  const error = ref<string | null>(null)
  const notice = ref<string | null>(null)
  const restartOutcome = ref<RestartOutcome | null>(null)
  const dirty = computed(() => Object.keys(drafts.value).length > 0)
  const hasErrors = computed(() => Object.keys(fieldErrors.value).length > 0)
  // Answers to older checks are dropped: only the latest drafts decide what is shown.
  let checkSeq = 0

  async function check(): Promise<void> {
    const seq = ++checkSeq
    const values = { ...drafts.value }
    try {
      const res = await useApi().call('checkSettings', { values })
      if (seq !== checkSeq) return
      fieldErrors.value = Object.fromEntries(res.errors.map((e) => [e.name, e.message]))
    } catch (err) {
      if (seq === checkSeq) error.value = err instanceof BackendError ? err.message : String(err)
    }
  }

  function edit(name: string, value: string, original: string): void {
    const next = { ...drafts.value }
    // Typing a field back to what is saved is no change.
    if (value === original) delete next[name]
    else next[name] = value
    drafts.value = next
    notice.value = null
    void check()
  }

  function discard(): void {
    drafts.value = {}
    fieldErrors.value = {}
    error.value = null
  }

  async function save(): Promise<void> {
    saving.value = true
    error.value = null
    notice.value = null
    try {
      const res = await useApi().call('saveSettings', { values: drafts.value })
      drafts.value = {}
      fieldErrors.value = {}
      restartOutcome.value = null
      const n = res.saved.length
      notice.value = res.restart_required ? `Saved ${n} setting${n === 1 ? '' : 's'}.` : 'Nothing to save.'
      await useSessionStore().refresh()
    } catch (err) {
      await check()
      error.value = hasErrors.value
        ? 'Nothing was saved: fix the fields marked below.'
        : err instanceof BackendError
          ? err.message
          : String(err)
    } finally {
      saving.value = false
    }
  }

  async function restart(): Promise<void> {
    restarting.value = true
    error.value = null
    try {
      restartOutcome.value = await useApi().call('restartServices', {})
      notice.value = 'Services restarted with the saved settings.'
      await useSessionStore().refresh()
    } catch (err) {
      error.value = err instanceof BackendError ? err.message : String(err)
    } finally {
      restarting.value = false
    }
  }

  return {
    drafts,
    fieldErrors,
    saving,
    restarting,
    error,
    notice,
    restartOutcome,
    dirty,
    hasErrors,
    edit,
    discard,
    save,
    restart,
  }
})
