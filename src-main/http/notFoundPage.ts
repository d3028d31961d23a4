import type { IncomingMessage, ServerResponse } from 'node:http'
import { DASHBOARD_CSP } from './middleware/dashboard'

/**
 * A person who follows a stale link or mistypes an address gets a page with a way back, not the
 * API's JSON error. Only for a browser navigation (GET or HEAD asking for HTML) outside the API
 * prefixes: scripts and API clients keep their JSON. No control route lives outside `/api/` and
 * `/v1/`, so such a path is unknown whether or not the caller is signed in.
 */
export function wantsNotFoundPage(req: IncomingMessage, path: string): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false
  if (path.startsWith('/api/') || path.startsWith('/v1/') || path === '/metrics') return false
  return /\btext\/html\b/.test(req.headers.accept ?? '')
}

// Static markup: nothing from the request is echoed into it.
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Page not found · Tandem</title>
    <style>
      :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
      main { max-width: 36rem; margin: 15vh auto; padding: 0 1rem; line-height: 1.5; }
      a { font-weight: 600; }
    </style>
  </head>
  <body>
    <main>
      <h1>Page not found</h1>
      <p>Nothing lives at this address. The link may be old, or the address mistyped.</p>
      <p><a href="/">Open the dashboard</a></p>
    </main>
  </body>
</html>
`

export function sendNotFoundPage(res: ServerResponse): void {
  res.writeHead(404, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(PAGE)),
    'Content-Security-Policy': DASHBOARD_CSP,
    'Cache-Control': 'no-store',
  })
  res.end(PAGE)
}
