import type net from 'node:net'

/** How much of what the node sent first is kept to name it in an error. */
const HEAD_BYTES = 64

/** How a connection attempt ended before the SSH session was ready. */
export type ConnectFailure =
  | { kind: 'error'; error: Error & { level?: string; code?: string } }
  | { kind: 'closed' }
  | { kind: 'timeout'; ms: number }

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`

/**
 * What the node did during one connection attempt (did TCP connect, what came back first), so a
 * failure says which of "nothing answers", "something answers but not SSH" and "SSH, but the
 * handshake failed" it was, instead of one wording for all three.
 */
export class ConnectAttempt {
  private tcpConnected = false
  private head: Buffer = Buffer.alloc(0)

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Watches the socket ssh2 speaks over; call after ssh2 has paused it, so no byte is lost. */
  watch(sock: net.Socket): void {
    sock.once('connect', () => {
      this.tcpConnected = true
    })
    const onData = (chunk: Buffer): void => {
      this.head = Buffer.concat([this.head, chunk]).subarray(0, HEAD_BYTES)
      if (this.head.length >= HEAD_BYTES) sock.off('data', onData)
    }
    sock.on('data', onData)
  }

  /** The message for a failure before the session was ready (without the target prefix). */
  describe(failure: ConnectFailure): string {
    const code = failure.kind === 'error' ? failure.error.code : undefined
    if (!this.tcpConnected && this.head.length === 0 && code !== undefined && code !== 'ECONNRESET')
      return this.socketError(failure.kind === 'error' ? failure.error : new Error(code), code)
    const ident = identification(this.head)
    if (ident !== null) return this.handshakeFailure(ident, failure)
    if (this.head.length > 0) {
      const within = failure.kind === 'timeout' ? ` within ${seconds(failure.ms)}` : ''
      return `answered, but not with SSH: the first bytes were "${printable(this.head)}" (no SSH- identification line${within}); is port ${this.port} the node's SSH port?`
    }
    return this.silence(failure, code)
  }

  /** Nothing came back: the node never connected, was silent, closed or reset. */
  private silence(failure: ConnectFailure, code: string | undefined): string {
    if (failure.kind === 'timeout')
      return this.tcpConnected
        ? `no SSH answer within ${seconds(failure.ms)}: the TCP connection was accepted but nothing came back (sshd hung or overloaded?)`
        : `no answer within ${seconds(failure.ms)}: the TCP connection to ${this.host}:${this.port} did not complete (node off, asleep or firewalled?)`
    if (code === 'ECONNRESET')
      return `the node reset the connection right after it was accepted, before any SSH identification (no SSH server on port ${this.port}, or it refuses this address)`
    if (failure.kind === 'error' && failure.error.level === 'client-timeout')
      return `no SSH answer: ${failure.error.message}`
    return `the node accepted the TCP connection and closed it without sending anything (no SSH server on port ${this.port}, or it refuses this address, e.g. sshd MaxStartups or a TCP wrapper)`
  }

  private handshakeFailure(ident: string, failure: ConnectFailure): string {
    if (failure.kind === 'timeout') return `SSH handshake with ${ident} did not complete within ${seconds(failure.ms)}`
    const reason = failure.kind === 'closed' ? 'the node closed the connection' : failure.error.message
    return `SSH handshake with ${ident} failed: ${reason}`
  }

  private socketError(error: Error, code: string): string {
    switch (code) {
      case 'ECONNREFUSED':
        return `connection refused: nothing listens on ${this.host}:${this.port} (is sshd running, and is the port right?)`
      case 'EHOSTUNREACH':
      case 'ENETUNREACH':
        return `no route to ${this.host} (${code}): the node is off the network`
      case 'ETIMEDOUT':
        return `no answer: the TCP connection to ${this.host}:${this.port} timed out (${code})`
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return `host name ${this.host} not found (${code})`
      default:
        return `cannot connect: ${error.message}`
    }
  }
}

/** The node's `SSH-…` identification line, when one of the first lines is one (other lines may come first, RFC 4253 4.2). */
function identification(head: Buffer): string | null {
  const lines = head.toString('latin1').split('\n')
  for (const [i, line] of lines.entries()) {
    // The last piece may be cut at HEAD_BYTES: a started identification is still one.
    const whole = i < lines.length - 1
    if (line.startsWith('SSH-')) return printable(Buffer.from(line.replace(/\r$/, ''), 'latin1')) + (whole ? '' : '…')
  }
  return null
}

/** Bytes as text an operator can read: printable ASCII kept, the rest as \r, \n or \xNN. */
function printable(bytes: Buffer): string {
  let out = ''
  for (const b of bytes) {
    if (b === 0x0d) out += '\\r'
    else if (b === 0x0a) out += '\\n'
    else if (b === 0x5c) out += '\\\\'
    else if (b === 0x22) out += '\\"'
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b)
    else out += `\\x${b.toString(16).padStart(2, '0')}`
  }
  return out
}
