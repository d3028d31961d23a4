import { resolve } from 'node:path'
import { defineConfig } from 'vite'

// `npm run startos:bundle`: the package code as one CommonJS file (javascript/index.js) with the SDK
// inside, which is what the StartOS packer takes.
export default defineConfig({
  build: {
    ssr: resolve(__dirname, 'index.ts'),
    outDir: resolve(__dirname, '../javascript'),
    emptyOutDir: true,
    target: 'node20',
    minify: false,
    rollupOptions: { output: { format: 'cjs', entryFileNames: 'index.js' } },
  },
  ssr: { noExternal: true, target: 'node' },
})
