import { createApp } from 'vue'
import { createPinia } from 'pinia'
import App from './App.vue'
import { router } from './router'
import { initBackend } from './api'
import { useSessionStore } from './stores/session'
import './styles.css'

const app = createApp(App)
const pinia = createPinia()
app.use(pinia)
initBackend(() => {
  useSessionStore(pinia).expired()
  if (router.currentRoute.value.name !== 'login') void router.push({ name: 'login' })
})
app.use(router)
app.mount('#app')
