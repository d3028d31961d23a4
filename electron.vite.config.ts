import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import type { Plugin } from 'vite'
import vue from '@vitejs/plugin-vue'
import { contractDataPlugin } from './scripts/contractData'

// The bundled model and prebuilt catalogs travel beside the main bundle (out/main/resources/).
const BUNDLED_CATALOGS = ['resources/models.yaml', 'resources/prebuilt.yaml']
const bundledCatalog = (): Plugin => ({
  name: 'bundled-model-catalog',
  buildStart() {
    for (const f of BUNDLED_CATALOGS) this.addWatchFile(resolve(__dirname, f))
  },
  generateBundle() {
    for (const f of BUNDLED_CATALOGS)
      this.emitFile({ type: 'asset', fileName: f, source: readFileSync(resolve(__dirname, f)) })
  },
})

// The asr overlay modules travel beside the main bundle too (out/main/overlays/asr/), for the speech
// patches to copy into the asr container; their tests stay behind.
const asrOverlays = (): Plugin => {
  const dir = resolve(__dirname, 'overlays/asr')
  const files = (): string[] => readdirSync(dir).filter((f) => f.endsWith('.py'))
  return {
    name: 'asr-overlays',
    buildStart() {
      for (const f of files()) this.addWatchFile(resolve(dir, f))
    },
    generateBundle() {
      for (const f of files())
        this.emitFile({ type: 'asset', fileName: `overlays/asr/${f}`, source: readFileSync(resolve(dir, f)) })
    },
  }
}

// Every build names the renderer's largest chunk and fails past the budget, so a value import that
// drags zod or the settings table back into the dashboard is caught where it lands.
const RENDERER_CHUNK_BUDGET_KB = 200
const largestChunk = (): Plugin => ({
  name: 'largest-renderer-chunk',
  generateBundle(_options, bundle) {
    const chunks = Object.values(bundle).flatMap((o) => (o.type === 'chunk' ? [o] : []))
    const largest = chunks.reduce((a, b) => (Buffer.byteLength(b.code) > Buffer.byteLength(a.code) ? b : a))
    const kb = Buffer.byteLength(largest.code) / 1000
    const line = `largest renderer chunk: ${largest.fileName} ${kb.toFixed(2)} kB (budget ${RENDERER_CHUNK_BUDGET_KB} kB)`
    if (kb > RENDERER_CHUNK_BUDGET_KB) this.error(line)
    console.log(line)
  },
})

// Non-default folders: every entry and the renderer root are named explicitly (STACK.md).
export default defineConfig({
  main: {
    build: {
      target: 'node24',
      outDir: 'out/main',
      rollupOptions: {
        input: { index: resolve(__dirname, 'src-main/index.ts'), cli: resolve(__dirname, 'src-main/cli/index.ts') },
        // Shared chunks beside the entries: code that finds its files from __dirname (renderer,
        // catalogs, overlays) sees out/main/ whichever entry loaded it.
        output: { chunkFileNames: '[name]-[hash].js' },
      },
    },
    plugins: [bundledCatalog(), asrOverlays()],
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
    plugins: [vue(), contractDataPlugin(), largestChunk()],
    build: {
      // Browsers load the dashboard over the network in headless mode, so it ships minified.
      minify: true,
      outDir: resolve(__dirname, 'out/renderer'),
      rollupOptions: { input: { index: resolve(__dirname, 'src-renderer/index.html') } },
    },
  },
})
