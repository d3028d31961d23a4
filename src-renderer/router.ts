import { createRouter, createWebHashHistory, type RouteRecordRaw } from 'vue-router'
import { useSessionStore } from './stores/session'

// Hash routing: the same build is served from file:// in the window and from / over HTTP.
const routes: RouteRecordRaw[] = [
  { path: '/', redirect: '/cluster' },
  { path: '/login', name: 'login', component: () => import('./views/LoginView.vue'), meta: { public: true } },
  { path: '/cluster', name: 'cluster', component: () => import('./views/ClusterView.vue'), meta: { title: 'Cluster' } },
  { path: '/models', name: 'models', component: () => import('./views/ModelsView.vue'), meta: { title: 'Models' } },
  {
    path: '/services',
    name: 'services',
    component: () => import('./views/ServicesView.vue'),
    meta: { title: 'Services' },
  },
  { path: '/gateway', name: 'gateway', component: () => import('./views/GatewayView.vue'), meta: { title: 'Gateway' } },
  {
    path: '/licensing',
    name: 'licensing',
    component: () => import('./views/LicensingView.vue'),
    meta: { title: 'Licensing' },
  },
  {
    path: '/settings',
    name: 'settings',
    component: () => import('./views/SettingsView.vue'),
    meta: { title: 'Settings' },
  },
  { path: '/:pathMatch(.*)*', redirect: '/cluster' },
]

export const NAV = routes
  .filter((r) => r.meta?.title)
  .map((r) => ({ name: r.name as string, title: r.meta?.title as string }))

export const router = createRouter({ history: createWebHashHistory(), routes })

router.beforeEach(async (to) => {
  const session = useSessionStore()
  if (session.authenticated === null) {
    try {
      await session.refresh()
    } catch {
      session.authenticated = false
    }
  }
  if (!to.meta.public && !session.authenticated) return { name: 'login', query: { next: to.fullPath } }
  if (to.name === 'login' && session.authenticated) return { name: 'cluster' }
  return true
})

router.afterEach((to) => {
  document.title = to.meta.title ? `${String(to.meta.title)} · Tandem` : 'Tandem'
})
