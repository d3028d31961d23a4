/**
 * HTML built from a tagged template that escapes every interpolated value. The only way to put
 * markup into a page is another `html` fragment, so an unescaped value cannot slip in by accident.
 */
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
}

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"'`]/g, (c) => ESCAPES[c] as string)
}

export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

type Part = SafeHtml | string | number | boolean | null | undefined | readonly Part[]

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return ''
  if (part instanceof SafeHtml) return part.text
  if (Array.isArray(part)) return part.map(render).join('')
  return escapeHtml(part)
}

export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0] ?? ''
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '')
  })
  return new SafeHtml(out)
}

/** The pages' Content-Security-Policy: no inline script or style, nothing from elsewhere. */
export const PAGES_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

export function page(title: string, body: SafeHtml, opts: { script?: boolean; refresh?: string } = {}): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        ${opts.refresh ? html`<meta http-equiv="refresh" content="${opts.refresh}" />` : ''}
        <title>${title}</title>
        <link rel="icon" type="image/svg+xml" href="/buy/assets/favicon.svg" />
        <link rel="stylesheet" href="/buy/assets/pages.css" />
        ${opts.script ? html`<script src="/buy/assets/pages.js" defer></script>` : ''}
      </head>
      <body>
        <main>${body}</main>
      </body>
    </html> `.text
}
