import net from 'node:net'

/**
 * Whether the demo can listen on `port` at `bind`, tried before anything starts: a busy port is
 * reported with its number and how to pick another, instead of starting the sim and seeding
 * whichever process already owns the port.
 */
export async function portProblem(port: number, bind: string): Promise<string | null> {
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    return `DEMO_PORT must be a port number between 1 and 65535 (got ${JSON.stringify(String(port))}).`
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        resolve(
          `Port ${port} on ${bind} is already in use (another Tandem or demo running?). ` +
            `Stop it, or pick another port: DEMO_PORT=${port === 65_535 ? port - 1 : port + 1} npm run demo`,
        )
      else resolve(`Cannot listen on ${bind}:${port}: ${err.message}. Set DEMO_PORT and DEMO_BIND to usable values.`)
    })
    server.listen({ port, host: bind, exclusive: true }, () => server.close(() => resolve(null)))
  })
}
