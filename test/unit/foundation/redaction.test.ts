import { describe, expect, it } from 'vitest'
import { createLogger, MemorySink, Redactor } from '../../../src-main/core/logger'

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
