#!/usr/bin/env node
// `npm test`: every check and suite in order, each run even if an earlier one failed, then one
// plain closing line `N passed, N failed` with the totals (CI reads that line).
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'

fs.mkdirSync('test-results', { recursive: true })
const results = []

function run(name, cmd, args, env = {}) {
  const started = Date.now()
  process.stdout.write(`\n=== ${name}: ${cmd} ${args.join(' ')}\n`)
  const res = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } })
  return ended(name, started, res.status, res.signal)
}

/** Prints a check's closing `=== name: ok / FAILED in N s` line; returns whether it passed. */
function ended(name, started, code, signal) {
  const ok = code === 0
  const took = ((Date.now() - started) / 1000).toFixed(1)
  process.stdout.write(`=== ${name}: ${ok ? 'ok' : `FAILED (exit ${code ?? signal})`} in ${took} s\n`)
  return ok
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

const npx = 'npx'

/** Runs a check with its output held back, then prints it whole; resolves to whether it passed. */
function runQuiet(name, cmd, args) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    child.stdout.on('data', (c) => out.push(c))
    child.stderr.on('data', (c) => out.push(c))
    child.on('close', (code, signal) => {
      process.stdout.write(`\n=== ${name}: ${cmd} ${args.join(' ')}\n${Buffer.concat(out).toString()}`)
      resolve(ended(name, started, code, signal))
    })
  })
}

// The static checks are each one process on one core: two lanes side by side halve their wall time
// on a two-core machine. Each check's output is printed whole when it ends.
const lanes = [
  [['lint', ['eslint', '.']]],
  [
    ['format', ['prettier', '--check', '.']],
    ['typecheck:main', ['tsc', '-p', 'tsconfig.node.json', '--noEmit']],
    ['typecheck:renderer', ['vue-tsc', '-p', 'tsconfig.web.json', '--noEmit']],
    // The StartOS package against @start9labs/start-sdk's types.
    ['typecheck:startos', ['tsc', '-p', 'startos/tsconfig.json', '--noEmit']],
    ['build', ['electron-vite', 'build']],
  ],
]
const laneResults = await Promise.all(
  lanes.map(async (lane) => {
    const done = []
    for (const [name, args] of lane) done.push({ name, ok: await runQuiet(name, npx, args) })
    return done
  }),
)
for (const { name, ok } of laneResults.flat()) results.push({ suite: name, passed: ok ? 1 : 0, failed: ok ? 0 : 1 })

// hadolint lints the Dockerfile where it is installed (.ci/run installs it when Debian provides it).
if (spawnSync('hadolint', ['--version'], { stdio: 'ignore' }).status === 0) {
  const ok = run('hadolint', 'hadolint', ['Dockerfile'])
  results.push({ suite: 'hadolint', passed: ok ? 1 : 0, failed: ok ? 0 : 1 })
} else process.stdout.write('\n=== hadolint: not installed here, Dockerfile lint skipped\n')

fs.rmSync('test-results/vitest.json', { force: true })
const vitestOk = run('vitest', npx, [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  '--outputFile.json=test-results/vitest.json',
])
const v = readJson('test-results/vitest.json')
results.push({
  suite: 'vitest (unit + integration)',
  passed: v?.numPassedTests ?? 0,
  failed: v ? v.numFailedTests + (vitestOk || v.numFailedTests > 0 ? 0 : 1) : 1,
  skipped: (v?.numPendingTests ?? 0) + (v?.numTodoTests ?? 0),
})

// The asr overlays' Python unit tests: their runner prints its counts as the last stdout line (JSON).
{
  const started = Date.now()
  process.stdout.write('\n=== python (asr overlays): python3 overlays/asr/tests/run.py\n')
  const res = spawnSync('python3', ['overlays/asr/tests/run.py'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  })
  const counts = (() => {
    try {
      return JSON.parse((res.stdout ?? '').trim().split('\n').pop() ?? '')
    } catch {
      return null
    }
  })()
  const ok = ended('python (asr overlays)', started, res.status, res.error?.message ?? res.signal)
  results.push({
    suite: 'python (asr overlays)',
    passed: counts?.passed ?? 0,
    failed: counts ? counts.failed + (ok || counts.failed > 0 ? 0 : 1) : 1,
    skipped: counts?.skipped ?? 0,
  })
}

fs.rmSync('test-results/playwright.json', { force: true })
const e2eOk = run('playwright (e2e)', npx, ['playwright', 'test'])
const p = readJson('test-results/playwright.json')
const stats = p?.stats
results.push({
  suite: 'playwright (e2e)',
  passed: stats?.expected ?? 0,
  failed: stats ? stats.unexpected + (stats.flaky ?? 0) + (e2eOk || stats.unexpected > 0 ? 0 : 1) : 1,
  skipped: stats?.skipped ?? 0,
})

/** The names of vitest's failed tests (or failed files, when a file failed before its tests ran). */
function vitestFailures(report) {
  const names = []
  for (const file of report?.testResults ?? []) {
    const rel = String(file.name ?? '').replace(`${process.cwd()}/`, '')
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed')
    for (const t of failedTests) names.push(`${rel} › ${t.fullName ?? t.title}`)
    if (failedTests.length === 0 && file.status === 'failed')
      names.push(`${rel}: ${String(file.message ?? '').split('\n')[0]}`)
  }
  return names
}

/** The names of Playwright's failed or flaky tests, walking its nested suites. */
function playwrightFailures(report) {
  const names = []
  const walk = (suite) => {
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        if (t.status === 'unexpected' || t.status === 'flaky')
          names.push(`${spec.file}:${spec.line} › ${spec.title} (${t.status})`)
      }
    }
    for (const child of suite.suites ?? []) walk(child)
  }
  for (const suite of report?.suites ?? []) walk(suite)
  return names
}

let passed = 0
let failed = 0
let skipped = 0
process.stdout.write('\n=== summary\n')
for (const r of results) {
  passed += r.passed
  failed += r.failed
  skipped += r.skipped ?? 0
  process.stdout.write(
    `${r.suite.padEnd(30)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(4)} failed${r.skipped ? ` ${r.skipped} skipped` : ''}\n`,
  )
}
// Named here, at the end, so a failure is found without scrolling back through the suites' output.
const failures = [...vitestFailures(v), ...playwrightFailures(p)]
if (failures.length > 0) process.stdout.write(`\nfailed:\n${failures.map((f) => `  ${f}`).join('\n')}\n`)
const line = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`
fs.writeFileSync('test-results/summary.txt', line + '\n')
process.stdout.write(`\n${line}\n`)
process.exit(failed === 0 ? 0 : 1)
