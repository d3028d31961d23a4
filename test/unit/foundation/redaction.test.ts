import { describe, expect, it } from 'vitest'
import { createLogger, MemorySink, Redactor } from '../../../src-main/lib/logger'

describe('redaction', () => {
  it('removes registered secrets and credential-shaped values from every line', () => {
    const r = new Redactor()
    r.add('nvapi-SECRET-123456')
    const sink = new MemorySink()
    const log = createLogger({ redactor: r, sink })
    log.info('docker login -p nvapi-SECRET-123456 nvcr.io')
    log.warn('upstream said', { header: 'Authorization: Bearer abcdefghijklmnop', other: 'token zyxwvutsrqpo' })
    log.error('config', { api_key: 'sk-live-0123456789', password: 'hunter2hunter2' })
    const all = sink.lines.join('\n')
    expect(all).not.toContain('nvapi-SECRET-123456')
    expect(all).not.toContain('abcdefghijklmnop')
    expect(all).not.toContain('zyxwvutsrqpo')
    expect(all).not.toContain('sk-live-0123456789')
    expect(all).not.toContain('hunter2hunter2')
    expect(all).toContain('docker login -p *** nvcr.io')
  })

  it('keeps the words around a masked bearer or token value as they were', () => {
    const r = new Redactor()
    expect(r.redact('sent Bearer abcdefghijklmnop to the llm')).toBe('sent Bearer *** to the llm')
    expect(r.redact('token\tzyxwvutsrqpo rejected')).toBe('token\t*** rejected')
  })

  it('ignores very short secrets that would redact ordinary words', () => {
    const r = new Redactor()
    r.add('abc')
    expect(r.redact('abc def')).toBe('abc def')
  })

  it('redacts a child logger through the same filter', () => {
    const r = new Redactor()
    const sink = new MemorySink()
    const log = createLogger({ redactor: r, sink }).child('ssh')
    r.add('hidden-value-42')
    log.info('got hidden-value-42')
    expect(sink.lines[0]).toContain('[ssh] got ***')
  })
})

describe('redaction of URL credentials and awkward secrets', () => {
  it('masks the password of a URL in log lines, keeping the user and host', () => {
    const sink = new MemorySink()
    const log = createLogger({ redactor: new Redactor(), sink })
    log.warn('cannot reach https://alice:s3cr3t-pw@embed.lan:8080/v1 (refused)')
    log.info('upstream', { url: 'http://bob:hunter2@10.0.0.5:6333/', list: ['postgres://u:p%40ss@db/x'] })
    const all = sink.lines.join('\n')
    expect(all).toContain('https://alice:***@embed.lan:8080/v1')
    expect(all).toContain('http://bob:***@10.0.0.5:6333/')
    expect(all).toContain('postgres://u:***@db/x')
    expect(all).not.toMatch(/s3cr3t-pw|hunter2|p%40ss/)
  })

  it('redactUrlCredentials leaves URLs without a password alone', () => {
    const r = new Redactor()
    expect(r.redact('see http://host:8080/path?q=1 and mailto:a@b.example')).toBe(
      'see http://host:8080/path?q=1 and mailto:a@b.example',
    )
    expect(r.redact('x https://user:pa:ss@h/ y')).toBe('x https://user:***@h/ y')
  })

  it('redacts a short registered secret in a structured field', () => {
    const r = new Redactor()
    const sink = new MemorySink()
    r.add('k3y') // a consumer key an operator chose: short, but still a secret
    const log = createLogger({ redactor: r, sink })
    log.info('consumer call', { key: 'k3y', keys: ['k3y'], nested: { value: 'k3y' } })
    expect(sink.lines[0]).not.toContain('k3y')
    expect(sink.lines[0]).toContain('***')
  })

  it('redacts a registered secret with quotes, backslashes or non-ASCII in structured fields', () => {
    const r = new Redactor()
    const sink = new MemorySink()
    const secrets = ['pa"ss\\word-123', 'wörd-geheim-42', 'tab\there-999', 'emoji-🔑-key-77']
    for (const s of secrets) r.add(s)
    const log = createLogger({ redactor: r, sink })
    log.info('values', { a: secrets[0], b: `prefix ${secrets[1]} suffix`, c: secrets[2], d: secrets[3] })
    log.info(`raw ${JSON.stringify({ e: secrets[0] })}`)
    const all = sink.lines.join('\n')
    for (const s of secrets) {
      expect(all).not.toContain(s)
      expect(all).not.toContain(JSON.stringify(s).slice(1, -1))
    }
  })

  it('redacts the values of fields named like credentials, whatever their length', () => {
    const sink = new MemorySink()
    const log = createLogger({ redactor: new Redactor(), sink })
    log.info('login', { password: 'abc', api_key: 'x1', webhookSecret: 'q"1', prompt_tokens: 12 })
    expect(sink.lines[0]).not.toMatch(/abc|x1|q\\"1/)
    expect(sink.lines[0]).toContain('"prompt_tokens":12')
  })

  it('redacts URL credentials and secrets in an error passed as a field', () => {
    const r = new Redactor()
    r.add('tok-123456')
    const sink = new MemorySink()
    const log = createLogger({ redactor: r, sink })
    log.error('failed', { error: new Error('GET https://u:pw-xyz@api.lan/ with tok-123456 failed') })
    expect(sink.lines[0]).toContain('https://u:***@api.lan/')
    expect(sink.lines[0]).not.toMatch(/pw-xyz|tok-123456/)
  })
})

describe('error messages a caller sees', () => {
  it('pass through the redactor: URL passwords and registered secrets are masked, code and status kept', async () => {
    const { ApiError } = await import('../../../src-main/contract/errors')
    const { toPublicError } = await import('../../../src-main/app/invoke')
    const r = new Redactor()
    r.add('prov-key-123456')
    const log = createLogger({ redactor: r, sink: new MemorySink() })
    const e = toPublicError(
      new ApiError('upstream_unreachable', 'https://shop:pw-9z@btcpay.lan refused key prov-key-123456', {
        headers: { 'Retry-After': '5' },
      }),
      log,
    )
    expect(e.message).toBe('https://shop:***@btcpay.lan refused key ***')
    expect(e.status).toBe(502)
    expect(e.code).toBe('upstream_unreachable')
    expect(e.headers).toEqual({ 'Retry-After': '5' })
  })
})
