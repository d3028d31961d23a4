import fs from 'node:fs'
import path from 'node:path'
import express, { type Express, type Request, type Response } from 'express'

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob: data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ')

/** Built layout: out/main/index.js beside out/renderer/. */
export function defaultRendererDir(): string | null {
  const candidate = path.resolve(__dirname, '../renderer')
  return fs.existsSync(candidate) ? candidate : null
}

/** The built renderer at `/` under a strict CSP; nothing when it was not built. */
export function mountDashboard(app: Express, rendererDir: string | null): void {
  if (!rendererDir || !fs.existsSync(path.join(rendererDir, 'index.html'))) return
  const indexHtml = fs.readFileSync(path.join(rendererDir, 'index.html'))
  const sendIndex = (_req: Request, res: Response): void => {
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP)
    res.setHeader('Cache-Control', 'no-cache')
    res.type('html').send(indexHtml)
  }
  app.get(['/', '/login', '/index.html'], sendIndex)
  const icon = path.join(rendererDir, 'favicon.svg')
  if (fs.existsSync(icon)) app.get('/favicon.svg', (_req, res) => res.type('image/svg+xml').sendFile(icon))
  app.use('/assets', express.static(path.join(rendererDir, 'assets'), { index: false, immutable: true, maxAge: '1y' }))
}
