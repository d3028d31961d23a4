import { onActivated, onDeactivated, onMounted, onUnmounted } from 'vue'

/**
 * Keeps a panel live: runs `load` when it appears and then every `ms` while it is shown (the
 * tabs are kept alive, so a hidden tab stops polling and catches up when shown again).
 */
export function usePolling(load: () => Promise<unknown>, ms: number): void {
  let timer: ReturnType<typeof setInterval> | null = null
  let running = false
  const tick = async (): Promise<void> => {
    if (running || document.hidden) return
    running = true
    try {
      await load()
    } finally {
      running = false
    }
  }
  const start = (): void => {
    if (timer) return
    void tick()
    timer = setInterval(() => void tick(), ms)
  }
  const stop = (): void => {
    if (timer) clearInterval(timer)
    timer = null
  }
  onMounted(start)
  onActivated(start)
  onDeactivated(stop)
  onUnmounted(stop)
}
