/**
 * Splits a byte stream into lines as it arrives. `\n`, `\r\n` and a lone `\r` all end a line, so
 * progress bars that redraw with carriage returns arrive as one line per redraw.
 */
export class LineSplitter {
  private pending = ''

  constructor(private readonly emit: (line: string) => void) {}

  push(chunk: string): void {
    let text = this.pending + chunk
    this.pending = ''
    // A trailing \r may be the first half of \r\n: wait for the next chunk.
    if (text.endsWith('\r')) {
      this.pending = '\r'
      text = text.slice(0, -1)
    }
    const parts = text.split(/\r\n|\r|\n/)
    const last = parts.pop() as string
    for (const p of parts) this.emit(p)
    this.pending = last + this.pending
  }

  end(): void {
    const rest = this.pending.replace(/\r$/, '')
    this.pending = ''
    if (rest !== '') this.emit(rest)
  }
}
