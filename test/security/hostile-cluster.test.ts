import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ENV_MAX_BYTES, ENV_MAX_ENTRIES, EnvValue } from '../../src-main/contract/schemas'
import { ensureServiceKey } from '../../src-main/ssh/keys'
import { startDaemon, type TestDaemon } from '../helpers/daemon'
import { startFullSim, type FullSim } from '../sim/full'
import { answerOf, badAnswer, hostileStrings, quotedOnly, shown, unquotedIn, type Answer } from './hostile'

/**
 * The hostile-input corpus through every contract method whose input reaches an SSH command or a
 * remote path, against the daemon with the simulated cluster (whose nodes run each command with
 * real bash and record it). Each string is refused with a clear 400, or accepted and then reaches
 * the nodes only single-quoted: nothing ever creates the marker file its `$(touch …)` strings
 * name, and tagged values read back byte for byte from the commands the nodes ran.
 */
let sim: FullSim
let d: TestDaemon
let dataDir: string
let marker: string
let strings: string[]

/** A per-run tag in front of a value, so its way through the nodes' commands can be traced. */
const tagOf = (i: number): string => `Hx${i}q`

const call = async (pathname: string, method = 'GET', body?: unknown): Promise<Answer> =>
  answerOf(await d.admin(pathname, { method, body: body === undefined ? undefined : JSON.stringify(body) }))
const commands = (): string[] => [...sim.cluster.node1.commands, ...sim.cluster.node2.commands]
const enc = encodeURIComponent

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-hostile-'))
  marker = path.join(dataDir, `pwned-${crypto.randomBytes(6).toString('hex')}`)
  strings = hostileStrings(marker)
  const key = ensureServiceKey(path.join(dataDir, 'ssh'))
  sim = await startFullSim({ authorizedKeys: [key.publicKey], llmModel: 'sim/first' })
  d = await startDaemon({
    env: {
      ...sim.env(),
      MONITOR_INTERVAL_S: '0',
      REGISTRY_API_KEY: 'nvapi-security-suite-0123456789',
      LOCAL_MODEL_ROOTS: '/data',
    },
    dataDir,
  })
})
afterAll(async () => {
  await d?.stop()
  await sim?.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

/**
 * One target: how a string is sent, which statuses besides 2xx mean "accepted" (a domain answer
 * such as 404 for a well-formed name that does not exist), and what to check once it was.
 */
interface Target {
  readonly label: string
  send(s: string, i: number): Promise<Answer>
  readonly accepted?: readonly number[]
  /** Sent several at a time: the method changes nothing a later string could meet. */
  readonly parallel?: boolean
  /** Problems with an accepted string (its round trip, its way to the nodes), or null. */
  after?(s: string, i: number, a: Answer): Promise<string | null>
}

/** Validates a model's launch on node1 (a real remote command) and reports an unquoted value in it. */
async function validateQuoted(key: string, s: string): Promise<string | null> {
  // A value of plain characters cannot change a command line: only one with shell syntax is traced.
  if (/^[A-Za-z0-9._:/@+=,-]*$/.test(s)) return null
  const from = commands().length
  const v = await call(`/api/swap/${enc(key)}/validate`, 'POST', { mode: 'solo' })
  if (v.status >= 500) return `validate answered ${v.status}`
  const bad = unquotedIn(commands().slice(from), s)
  return bad === null ? null : `unquoted in a command: ${bad}`
}

/** A model target: add an entry with the string in one field, read the saved entry back, validate its launch. */
function modelTarget(
  label: string,
  entry: (s: string, key: string) => Record<string, unknown>,
  readBack: (view: Record<string, unknown>, s: string) => boolean,
  viaNodes: boolean,
): Target {
  const keyOf = (i: number): string => `hostile-${label.replace(/\W+/g, '-')}-${i}`
  return {
    label,
    send: (s, i) => call('/api/models', 'POST', entry(s, keyOf(i))),
    async after(s, _i, a) {
      const view = a.body as Record<string, unknown> & { key: string }
      if (!readBack(view, s)) return `did not read back: ${a.text.slice(0, 200)}`
      return viaNodes ? validateQuoted(view.key, s) : null
    },
  }
}

const REPO = 'acme/hostile-model'

const install = (container: string, port: number, env: Record<string, string>): Promise<Answer> =>
  call('/api/prebuilt/install', 'POST', {
    image: 'nvcr.io/nim/nvidia/parakeet-tdt-0.6b-v2:1.0.0',
    container,
    volume: 'hostile-cache',
    port,
    env,
  })

/** The install job an accepted install started, once it has ended. */
async function installed(started: Answer): Promise<{ state: string; error?: string | null }> {
  expect(started.status, started.text).toBe(200)
  const id = (started.body as { job_id: string }).job_id
  for (let n = 0; n < 600; n++) {
    const job = (await call(`/api/prebuilt/install/${id}`)).body as { state: string; error?: string | null }
    if (job.state !== 'running') return job
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`install ${id} did not end`)
}

/**
 * Sends strings in groups through a method taking a list; a refused group is halved until each
 * refused string stands alone. The accepted groups with their answers, the refused strings with theirs.
 */
async function inGroups(
  items: readonly string[],
  size: number,
  send: (group: string[]) => Promise<Answer>,
): Promise<{ carried: [string[], Answer][]; refused: [string, Answer][] }> {
  const out: { carried: [string[], Answer][]; refused: [string, Answer][] } = { carried: [], refused: [] }
  const split = async (group: string[]): Promise<void> => {
    const a = await send(group)
    if (a.status !== 400) out.carried.push([group, a])
    else if (group.length === 1) out.refused.push([group[0] as string, a])
    else {
      await split(group.slice(0, group.length >> 1))
      await split(group.slice(group.length >> 1))
    }
  }
  for (let i = 0; i < items.length; i += size) await split(items.slice(i, i + size))
  return out
}

/** The problems with the answer to a string: a refusal must be a clear 400. */
const badAnswers = (s: string, a: Answer): string[] => {
  const bad = badAnswer(a, [])
  return bad ? [`${shown(s)}: ${bad}`] : []
}

/** Runs `fn` over the corpus, `width` strings at a time. */
async function eachString(width: number, fn: (s: string, i: number) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < strings.length; i = next++) await fn(strings[i] as string, i)
  }
  await Promise.all(Array.from({ length: width }, worker))
}

const TARGETS: Target[] = [
  modelTarget(
    'model key',
    (s) => ({ key: s, name: 'Hostile', repo: REPO }),
    () => true,
    true,
  ),
  modelTarget(
    'model repo',
    (s, key) => ({ key, name: 'Hostile', repo: s }),
    (v, s) => v.repo === s,
    true,
  ),
  modelTarget(
    'model local path',
    (s, key) => ({ key, name: 'Hostile', local_path: s }),
    (v, s) => v.local_path === s,
    true,
  ),
  modelTarget(
    'model chat template',
    (s, key) => ({ key, name: 'Hostile', repo: REPO, chat_template: s }),
    (v, s) => v.chat_template === s,
    true,
  ),
  modelTarget(
    'model image',
    (s, key) => ({ key, name: 'Hostile', repo: REPO, container: s }),
    (v, s) => v.container === s,
    true,
  ),
  {
    label: 'model knob value',
    send: (s) => call(`/api/models/qwen3-32b-fp8/knobs`, 'PUT', { knobs: { 'max-model-len': s } }),
    parallel: true,
  },
  {
    label: 'model key in a path',
    send: (s) => call(`/api/models/${enc(s)}/fit`),
    accepted: [404, 414, 431],
    parallel: true,
  },
  {
    label: 'download repo',
    send: (s) => call('/api/download', 'POST', { repo: s, mode: 'solo' }),
    async after(s, _i, a) {
      const id = (a.body as { job_id: string }).job_id
      for (let n = 0; n < 200; n++) {
        const job = (await call(`/api/download/${id}`)).body as { state: string }
        if (job.state !== 'running') return unquotedIn(commands(), s)
        await new Promise((r) => setTimeout(r, 50))
      }
      return 'the download did not end'
    },
  },
  { label: 'download target', send: (s) => call('/api/download', 'POST', { repo: REPO, target: s }), parallel: true },
  { label: 'wake MAC', send: (s) => call('/api/node/node1/wake', 'POST', { mac: s }), accepted: [409], parallel: true },
  {
    label: 'node name in a path',
    send: (s) => call(`/api/node/${enc(s)}/wake`, 'POST', {}),
    accepted: [404, 414, 431],
    parallel: true,
  },
  {
    label: 'known host to forget',
    send: (s) => call(`/api/ssh/known-hosts?host=${enc(s)}&port=22`, 'DELETE'),
    accepted: [414, 431],
    parallel: true,
  },
  {
    label: 'host key to trust',
    send: (s) => call('/api/ssh/known-hosts/trust', 'POST', { host: s, fingerprint: `SHA256:${'A'.repeat(43)}` }),
    accepted: [404, 409],
    parallel: true,
  },
  {
    label: 'service name',
    send: (s) => call(`/api/services/${enc(s)}/logs`),
    accepted: [404, 414, 431],
    parallel: true,
  },
  {
    label: 'service action',
    send: (s) => call(`/api/services/asr/${enc(s)}`, 'POST', {}),
    accepted: [404, 414, 431],
    parallel: true,
  },
  {
    label: 'deep-health service',
    send: (s) => call(`/api/deep-health/${enc(s)}/run`, 'POST', {}),
    accepted: [404, 414, 431],
    parallel: true,
  },
  {
    label: 'recipe to import',
    send: (s) => call(`/api/models/recipes/${enc(s)}/import`, 'POST', {}),
    accepted: [404, 409, 414, 431],
    parallel: true,
  },
]

/** Settings that reach remote commands or URLs, checked (not saved) with the string as their value. */
const CHECKED_SETTINGS = [
  'NODE1_HOST',
  'NODE1_USER',
  'LLM_CONTAINER',
  'LAUNCHER_DIR',
  'LOCAL_MODEL_ROOTS',
  'CHAT_UI_URL',
  'PUBLIC_URL',
  'EMBEDDINGS_URL',
  'REDIRECT_ALLOWLIST',
  'RATE_SOURCES',
  'TRUSTED_PROXIES',
  'WOL_BROADCAST',
]
/** Of those, the ones spliced into remote commands: an accepted value must hold no shell syntax. */
const SHELL_SETTINGS = new Set(['NODE1_HOST', 'NODE1_USER', 'LLM_CONTAINER', 'LAUNCHER_DIR', 'LOCAL_MODEL_ROOTS'])

// Each test walks the whole corpus: minutes on a loaded machine, not the default 30 s.
describe('the hostile-input corpus against the simulated cluster', { timeout: 180_000 }, () => {
  it('has the corpus, the marker in it', () => {
    expect(strings.length).toBeGreaterThanOrEqual(200)
    expect(strings.filter((s) => s.includes(marker)).length).toBeGreaterThanOrEqual(20)
  })

  it.each(TARGETS.map((t) => [t.label, t] as const))('%s: refused with a 400, or carried as data', async (_l, t) => {
    const problems: string[] = []
    await eachString(t.parallel ? 6 : 1, async (s, i) => {
      const a = await t.send(s, i)
      const bad = badAnswer(a, t.accepted ?? [])
      if (bad) problems.push(`${shown(s)}: ${bad}`)
      else if (a.status >= 200 && a.status < 300 && t.after) {
        const after = await t.after(s, i, a)
        if (after) problems.push(`${shown(s)}: ${after}`)
      }
    })
    expect(problems).toEqual([])
    expect(fs.existsSync(marker), 'a string ran as a command').toBe(false)
  })

  it('model mods and build args: refused, or saved as written', async () => {
    const problems: string[] = []
    let n = 0
    const { carried, refused } = await inGroups(strings, 32, (group) =>
      call('/api/models', 'POST', {
        key: `hostile-text-${n++}`,
        name: 'Hostile',
        repo: REPO,
        mods: group,
        build_args: group,
      }),
    )
    for (const [s, a] of refused) problems.push(...badAnswers(s, a))
    for (const [group, a] of carried) {
      if (a.status !== 200) {
        problems.push(`${shown(group.join(' '))}: answered ${a.status}`)
        continue
      }
      const view = a.body as { mods?: string[]; build_args?: string[] }
      const want = JSON.stringify(group.map((s) => s.trim()))
      if (JSON.stringify(view.mods) !== want || JSON.stringify(view.build_args) !== want)
        problems.push(`${shown(group.join(' '))}: read back wrong`)
    }
    expect(problems).toEqual([])
    expect(carried.flatMap(([g]) => g).length).toBeGreaterThan(strings.length / 2)
  })

  it('engine arguments: refused, or reach the validation command single-quoted and byte for byte', async () => {
    const problems: string[] = []
    const tagged = strings.map((s, i) => tagOf(i) + s)
    let n = 0
    const { carried, refused } = await inGroups(tagged, 64, (group) =>
      call('/api/models', 'POST', { key: `hostile-arg-${n++}`, name: 'A', repo: REPO, engine_args: group }),
    )
    for (const [s, a] of refused) problems.push(...badAnswers(s, a))
    for (const [group, a] of carried)
      if (a.status !== 200) problems.push(`${shown(group.join(' '))}: answered ${a.status}`)
    const values = carried.flatMap(([g]) => g)
    expect(values.length).toBeGreaterThan(20)
    // The accepted ones, 128 to an entry (the most it takes), validated on node1: a real remote command.
    for (let c = 0; c * 128 < values.length; c++) {
      const chunk = values.slice(c * 128, (c + 1) * 128)
      const key = `hostile-args-${c}`
      expect((await call('/api/models', 'POST', { key, name: 'A', repo: REPO, engine_args: chunk })).status).toBe(200)
      const from = commands().length
      const v = await call(`/api/swap/${key}/validate`, 'POST', { mode: 'solo' })
      expect(v.status).toBe(200)
      const ran = commands().slice(from)
      for (const value of chunk) {
        const q = quotedOnly(ran, value.slice(0, value.indexOf('q') + 1), value)
        if (q.problem || q.found === 0) problems.push(`${shown(value)}: ${q.problem ?? 'never reached node1'}`)
      }
    }
    expect(problems).toEqual([])
    expect(fs.existsSync(marker), 'a string ran as a command').toBe(false)
  })

  it('prebuilt environment values: refused, or reach docker run single-quoted and land byte for byte', async () => {
    const problems: string[] = []
    // Installs as large as an environment may be (the schema's own limits), so every string is tried.
    const batches: Record<string, string>[] = [{}]
    let size = 0
    for (const [i, s] of strings.entries()) {
      if (!EnvValue.safeParse(s).success) {
        const a = await install('hostile-refused', 9149, { H: s })
        const bad = a.status === 400 ? badAnswer(a, []) : `answered ${a.status}`
        if (bad) problems.push(`${shown(s)}: ${bad}`)
        continue
      }
      const value = tagOf(i) + s
      const bytes = Buffer.byteLength(`H${i}`) + Buffer.byteLength(value) + 2
      if ((size + bytes > ENV_MAX_BYTES || Object.keys(batches.at(-1)!).length >= ENV_MAX_ENTRIES) && size > 0) {
        batches.push({})
        size = 0
      }
      batches.at(-1)![`H${i}`] = value
      size += bytes
    }
    expect(batches.flatMap((b) => Object.keys(b)).length).toBeGreaterThan(200)
    for (const [b, env] of batches.entries()) {
      const container = `hostile-env-${b}`
      const from = commands().length
      const job = await installed(await install(container, 9150 + b, env))
      expect(job.state, job.error ?? '').toBe('succeeded')
      const ran = commands().slice(from)
      const landed = JSON.parse(
        fs.readFileSync(path.join(sim.cluster.node2.state, 'docker', 'containers', `${container}.json`), 'utf8'),
      ) as { Config: { Env: string[] } }
      for (const [name, value] of Object.entries(env)) {
        const q = quotedOnly(ran, value.slice(0, value.indexOf('q') + 1), value)
        if (q.problem || q.found === 0) problems.push(`${shown(value)}: ${q.problem ?? 'never reached node2'}`)
        if (!landed.Config.Env.includes(`${name}=${value}`))
          problems.push(`${shown(value)}: not in the container's env`)
      }
    }
    expect(problems).toEqual([])
    expect(fs.existsSync(marker), 'a string ran as a command').toBe(false)
  })

  it('settings that reach commands and URLs: every value checked, none with shell syntax accepted', async () => {
    const problems: string[] = []
    await eachString(6, async (s) => {
      const values = Object.fromEntries(CHECKED_SETTINGS.map((n) => [n, s]))
      const a = await call('/api/settings/check', 'POST', { values })
      const bad = badAnswer(a, [])
      if (bad) problems.push(`${shown(s)}: ${bad}`)
      if (a.status !== 200) return
      const refused = new Set(((a.body as { errors: { name: string }[] }).errors ?? []).map((e) => e.name))
      for (const name of SHELL_SETTINGS)
        // Values are trimmed before they are checked: what would be saved is the trimmed text.
        if (!refused.has(name) && /[^A-Za-z0-9._/:@,-]/.test(s.trim().replace(/^\$HOME\//, '')))
          problems.push(`${shown(s)}: ${name} accepted it`)
    })
    expect(problems).toEqual([])
  })

  it('a free-text setting saved with each string reads back byte for byte', async () => {
    const problems: string[] = []
    for (const s of strings) {
      const a = await call('/api/settings', 'PUT', { values: { SCRUB_TERMS: s } })
      const bad = badAnswer(a, [])
      if (bad) problems.push(`${shown(s)}: ${bad}`)
      if (a.status !== 200) continue
      // Saved values apply at the next restart: the settings file is where they are kept until then.
      const saved = JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8')) as Record<string, unknown>
      // Saved trimmed; blank and "null" mean unset (README, Settings).
      const trimmed = s.trim()
      const expected = trimmed === '' || trimmed.toLowerCase() === 'null' ? undefined : trimmed
      if (saved.SCRUB_TERMS !== expected) problems.push(`${shown(s)}: read back ${shown(String(saved.SCRUB_TERMS))}`)
    }
    await call('/api/settings', 'PUT', { values: { SCRUB_TERMS: '' } })
    expect(problems).toEqual([])
  })

  it('no string ever ran as a command on a node or the daemon: the marker does not exist', () => {
    expect(fs.existsSync(marker)).toBe(false)
    expect(commands().length).toBeGreaterThan(0)
  })
})
