import fs from 'node:fs'
import path from 'node:path'

/**
 * Where the demo keeps its state between runs (DEMO_DATA_DIR, default .tandem-data/demo), what a
 * run picks up from the one before, and DEMO_FRESH=1 to start clean. test/sim/demo.mts uses these
 * before anything starts; the demo-data tests run them on their own.
 */

/** Written into every demo data directory: DEMO_FRESH empties only a directory that has it. */
export const DEMO_MARKER = '.tandem-demo'
/** The simulated cluster's settings of the latest run, for `tandem doctor --env-file`. */
export const DEMO_ENV_FILE = 'demo.env'

/** DEMO_FRESH: 1 starts clean, unset or 0 keeps the previous run's state; anything else is refused. */
export function demoFresh(raw: string | undefined): boolean | string {
  const v = (raw ?? '').trim()
  if (v === '' || v === '0') return false
  if (v === '1') return true
  return `DEMO_FRESH must be 1 (start clean) or 0 (keep the previous run's state), got ${JSON.stringify(raw)}.`
}

export interface DemoData {
  readonly dir: string
  /** new: nothing was there; kept: the previous run's state is used; emptied: DEMO_FRESH=1 cleared it. */
  readonly state: 'new' | 'kept' | 'emptied'
  /** What the previous run left that this one carries, in words (empty unless kept). */
  readonly carried: readonly string[]
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown
  } catch {
    return null
  }
}

/** The placements the intent file asks for, as "key on node1+node2". */
function placementsOf(dir: string): string[] {
  const body = readJson(path.join(dir, 'placement-intent.json')) as { intents?: unknown } | null
  if (!body || !Array.isArray(body.intents)) return []
  return body.intents.flatMap((i: { key?: unknown; nodes?: unknown }) =>
    typeof i.key === 'string' && Array.isArray(i.nodes) ? [`${i.key} on ${i.nodes.join('+')}`] : [],
  )
}

/** What a previous run left in `dir` that the daemon picks up again. */
export function carriedState(dir: string): string[] {
  const out: string[] = []
  const placements = placementsOf(dir)
  if (placements.length > 0) out.push(`placements (${placements.join(', ')})`)
  const settings = readJson(path.join(dir, 'settings.json'))
  const saved = settings && typeof settings === 'object' ? Object.keys(settings).length : 0
  if (saved > 0) out.push(`${saved} saved setting${saved === 1 ? '' : 's'} (settings.json)`)
  const has = (f: string): boolean => fs.existsSync(path.join(dir, f))
  if (has('hardware-history.json') || has('connectivity.json')) out.push('the charts and connectivity history')
  if (has('licensing.sqlite')) out.push("the shop's sales")
  if (has('admin-token')) out.push('the admin token')
  return out
}

/** Whether `dir` holds a demo's state (its marker, or the files a demo of before the marker left). */
function isDemoData(dir: string): boolean {
  const has = (f: string): boolean => fs.existsSync(path.join(dir, f))
  return has(DEMO_MARKER) || (has('admin-token') && has('licensing.sqlite') && has('ssh'))
}

/**
 * Makes the data directory ready: kept as it is, or emptied with DEMO_FRESH=1. A directory that
 * is not a demo's is never emptied (a mistyped DEMO_DATA_DIR must not delete someone's files):
 * the answer is then the reason, a string.
 */
export function prepareDemoData(dir: string, fresh: boolean): DemoData | string {
  const entries = fs.existsSync(dir) ? fs.readdirSync(dir) : []
  let state: DemoData['state'] = entries.length === 0 ? 'new' : 'kept'
  if (fresh && state === 'kept') {
    if (!isDemoData(dir))
      return `DEMO_FRESH=1 empties only a demo's data directory, and ${dir} is not one (no ${DEMO_MARKER} in it): empty it yourself or pick another DEMO_DATA_DIR.`
    for (const e of entries) fs.rmSync(path.join(dir, e), { recursive: true, force: true })
    state = 'emptied'
  }
  const carried = state === 'kept' ? carriedState(dir) : []
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  fs.writeFileSync(path.join(dir, DEMO_MARKER), 'The state of a Tandem demo (npm run demo); DEMO_FRESH=1 empties it.\n')
  return { dir, state, carried }
}

/** A path as one shell word. */
const word = (p: string): string => (/^[\w@%+=:,./-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`)

/** The lines the demo prints about its state, under the dashboard and token. */
export function demoDataLines(d: DemoData): string[] {
  const fresh = '               DEMO_FRESH=1 npm run demo starts clean'
  if (d.state === 'emptied')
    return [
      `  Data:        ${d.dir}`,
      '               emptied (DEMO_FRESH=1): this run starts clean; kept for the next',
    ]
  if (d.state === 'new' || d.carried.length === 0)
    return [`  Data:        ${d.dir}`, '               new: nothing from a previous run; kept for the next', fresh]
  return [`  Data:        ${d.dir}`, `               kept from the previous run: ${d.carried.join(', ')}`, fresh]
}

/** Writes the daemon's cluster settings (node addresses, service ports) where `tandem doctor` can read them. */
export function writeDemoEnv(dir: string, env: Readonly<Record<string, string>>): string {
  const file = path.join(dir, DEMO_ENV_FILE)
  const lines = Object.entries(env).map(([k, v]) => `${k}=${JSON.stringify(v)}`)
  const head = '# The simulated cluster of the latest demo run (rewritten at each start), for tandem doctor --env-file.'
  fs.writeFileSync(file, `${head}\n${lines.join('\n')}\n`, { mode: 0o600 })
  return file
}

/** The command that checks the running demo with `tandem doctor`. */
export function demoDoctorCommand(dir: string): string {
  return `npx tandem doctor --data-dir ${word(dir)} --env-file ${word(path.join(dir, DEMO_ENV_FILE))}`
}
