import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src-main/config/load'
import { ServiceDirectory } from '../../../src-main/cluster/serviceDirectory'

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-directory-'))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

const directory = (env: Record<string, string>): ServiceDirectory =>
  new ServiceDirectory(loadConfig({ env: { DATA_DIR: dataDir, ...env } }))

describe('service directory', () => {
  it('places llm on node1 and the speech services on node2 unless a role has its own host', () => {
    const d = directory({
      NODE1_HOST: '10.0.0.1',
      NODE1_USER: 'op',
      NODE2_HOST: 'spark-2.lan',
      NODE2_USER: 'op',
      NODE2_SSH_PORT: '2222',
      TTS_HOST: 'fe80::2',
      TTS_USER: 'speech',
      LLM_PORT: '8000',
      ASR_PORT: '9001',
      TTS_PORT: '9002',
    })
    expect(d.role('llm')).toMatchObject({
      configured: true,
      baseUrl: 'http://10.0.0.1:8000',
      host: '10.0.0.1',
      port: 8000,
      ssh: { host: '10.0.0.1', user: 'op', port: 22 },
      hint: null,
    })
    expect(d.role('asr')).toMatchObject({
      baseUrl: 'http://spark-2.lan:9001',
      ssh: { host: 'spark-2.lan', user: 'op', port: 2222 },
    })
    expect(d.role('tts')).toMatchObject({
      baseUrl: 'http://[fe80::2]:9002',
      ssh: { host: 'fe80::2', user: 'speech', port: 22 },
    })
    // ASR_CONTAINER unset: the container keeps its default name.
    expect(d.role('asr').container).toBe('asr')
  })

  it('says what to set for each service that is not configured', () => {
    const d = directory({})
    for (const s of d.all()) {
      expect(s.configured, s.name).toBe(false)
      expect(s.baseUrl, s.name).toBeNull()
    }
    expect(d.get('llm').hint).toMatch(/NODE1_HOST/)
    expect(d.get('asr').hint).toMatch(/ASR_HOST/)
    expect(d.get('tts').hint).toMatch(/TTS_HOST/)
    expect(d.get('embeddings').hint).toMatch(/EMBEDDINGS_URL/)
    expect(d.get('vector').hint).toMatch(/VECTOR_URL/)
  })

  it('takes embeddings and vector from their URLs, with host and port', () => {
    const d = directory({ EMBEDDINGS_URL: 'http://emb.lan:8080/v1/', VECTOR_URL: 'https://qdrant.lan' })
    expect(d.get('embeddings')).toMatchObject({
      configured: true,
      baseUrl: 'http://emb.lan:8080/v1',
      host: 'emb.lan',
      port: 8080,
    })
    expect(d.get('vector')).toMatchObject({ baseUrl: 'https://qdrant.lan', port: 443 })
  })
})
