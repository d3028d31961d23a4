import http from 'node:http'

/** One POST as the equivalence tests send it: where it goes, how its body is framed, what it carries. */
export interface RawCase {
  readonly path: string
  readonly headers: Record<string, string>
  /** Body pieces: one piece with Content-Length, several as a chunked request body. */
  readonly pieces: string[]
  readonly chunked: boolean
}

/** A case whose body is `text`: whole with Content-Length, or chunked in three pieces. */
export function rawCase(path: string, headers: Record<string, string>, text: string, chunked: boolean): RawCase {
  const cut = Math.floor(text.length / 3)
  return {
    path,
    headers,
    pieces: chunked ? [text.slice(0, cut), text.slice(cut, 2 * cut), text.slice(2 * cut)] : [text],
    chunked,
  }
}

/** What came back, as text to compare: status line and headers in order (Date aside), then the body. */
export interface RawAnswer {
  readonly head: string
  readonly body: Buffer
  /** Why the answer stopped short, when it did. */
  readonly cut?: string
}

/** Raw headers (name, value, name, value…) as `name: value` lines, in order. */
export function headerLines(raw: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < raw.length; i += 2) out.push(`${raw[i]}: ${raw[i + 1]}`)
  return out
}

/** Sends one case on its own connection; resolves with the answer, or with the error text when there was none. */
export function exchange(base: string, c: RawCase): Promise<RawAnswer | string> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...c.headers }
    if (!c.chunked) headers['content-length'] = Buffer.byteLength(c.pieces[0]!)
    const req = http.request(base + c.path, { method: 'POST', headers, agent: false })
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      const head = [
        `${res.statusCode} ${res.statusMessage}`,
        ...headerLines(res.rawHeaders).filter((h) => !/^date:/i.test(h)),
      ].join('\n')
      res.on('data', (b: Buffer) => chunks.push(b))
      res.on('end', () => resolve({ head, body: Buffer.concat(chunks) }))
      res.on('error', (err) => resolve({ head, body: Buffer.concat(chunks), cut: err.message }))
    })
    req.on('error', (err) => resolve(`ERROR ${err.message}`))
    for (const p of c.pieces.slice(0, -1)) req.write(p)
    req.end(c.pieces.at(-1))
  })
}
