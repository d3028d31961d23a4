import { defineStore } from 'pinia'
import { ref } from 'vue'
import { useApi, BackendError } from '../api'
import type { OutputOf } from '../api'

export type PublicConfig = OutputOf<'getConfig'>

/** Who the operator is to the backend, and the configuration every view reads. */
export const useSessionStore = defineStore('session', () => {
  const authenticated = ref<boolean | null>(null)
  const config = ref<PublicConfig | null>(null)
  const loginError = ref<string | null>(null)

  async function refresh(): Promise<void> {
    const api = useApi()
    const s = await api.call('session', {})
    authenticated.value = s.authenticated
    if (s.authenticated) config.value = await api.call('getConfig', {})
  }

  async function login(token: string): Promise<boolean> {
    loginError.value = null
    try {
      await useApi().call('login', { token })
      await refresh()
      return true
    } catch (err) {
      loginError.value = err instanceof BackendError ? err.message : String(err)
      return false
    }
  }

  async function logout(): Promise<void> {
    await useApi().call('logout', {})
    authenticated.value = false
    config.value = null
  }

  function expired(): void {
    authenticated.value = false
  }

  return { authenticated, config, loginError, refresh, login, logout, expired }
})
