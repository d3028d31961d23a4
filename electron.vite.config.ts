import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import vue from '@vitejs/plugin-vue'

// Non-default folders: every entry and the renderer root are named explicitly (STACK.md).
export default defineConfig({
  main: {
    build: {
      target: 'node20',
      outDir: 'out/main',
      rollupOptions: { input: { index: resolve(__dirname, 'src-main/index.ts') } },
    },
  },
  preload: {
    build: {
      outDir: 'out/preload',
      rollupOptions: { input: { index: resolve(__dirname, 'src-preload/index.ts') } },
    },
  },
  renderer: {
    root: resolve(__dirname, 'src-renderer'),
    // Static files copied as they are into the renderer build (the favicon).
    publicDir: resolve(__dirname, 'resources/public'),
    base: '/',
    plugins: [vue()],
    build: {
      outDir: resolve(__dirname, 'out/renderer'),
      rollupOptions: { input: { index: resolve(__dirname, 'src-renderer/index.html') } },
    },
  },
})
