import { StringDecoder } from 'node:string_decoder'
import { LineSplitter } from './lines'

/** One output stream of a command: UTF-8 decoded across chunk edges, kept whole, and split into lines as it comes. */
export class StreamText {
  private readonly parts: string[] = []
  private readonly decoder = new StringDecoder('utf8')
  private readonly lines: LineSplitter | null

  constructor(onLine: ((line: string) => void) | undefined) {
    this.lines = onLine ? new LineSplitter(onLine) : null
  }

  write(chunk: Buffer): void {
    this.add(this.decoder.write(chunk))
  }

  end(): void {
    this.add(this.decoder.end())
    this.lines?.end()
  }

  text(): string {
    return this.parts.join('')
  }

  private add(s: string): void {
    this.parts.push(s)
    this.lines?.push(s)
  }
}
