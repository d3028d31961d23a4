import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import type { Plugin } from 'vite'
import vue from '@vitejs/plugin-vue'

// The bundled model catalog travels beside the main bundle (out/main/resources/models.yaml).
const bundledCatalog = (): Plugin => ({
  name: 'bundled-model-catalog',
  buildStart() {
    this.addWatchFile(resolve(__dirname, 'resources/models.yaml'))
  },
  generateBundle() {
    const source = readFileSync(resolve(__dirname, 'resources/models.yaml'))
    this.emitFile({ type: 'asset', fileName: 'resources/models.yaml', source })
  },
})

// Non-default folders: every entry and the renderer root are named explicitly (STACK.md).
export default defineConfig({
  main: {
    build: {
      target: 'node20',
      outDir: 'out/main',
      rollupOptions: { input: { index: resolve(__dirname, 'src-main/index.ts') } },
    },
    plugins: [bundledCatalog()],
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
