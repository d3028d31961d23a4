// Simulated rsync for copying a model cache to the other node:
// `rsync -av [--mkpath] --progress [-e 'ssh -p N ...'] [--] SRC... [USER@]HOST:DIR/`.
// Output replays the recorded `rsync -av --mkpath --progress` run (test/fixtures/downloads/
// rsync-progress.raw.txt) for the files actually copied: each file takes the recorded redraws of the
// recorded file of the same size rank, on stdout, in the recorded format; errors go to stderr with
// rsync's and ssh's exit codes. The network, as the sim models it:
// - every other node of the sim ($SIM_CLUSTER) answers on its LAN address at port 22, and on its
//   own loopback address at its sim SSH port; anything else is refused; `peer_unreachable` in
//   $SIM_STATE makes them unreachable;
// - only that node's user is let in;
// - paths under the peer's directory are the peer's; a path under this node's directory is the same
//   path on the peer only when both nodes have the same user (identical accounts on identical
//   machines); any other path cannot be created there.
// Knobs: download_mbps (the network's MB/s: each file takes its bytes' time at that rate, redrawn
// once a second with that rate, see pacing.mjs), else download_delay (seconds between recorded redraws).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { pacedRate, rsyncPaced } from './pacing.mjs'
import { commas, knob, replayDraw, RSYNC_RECORDING, rsyncLine, rsyncPattern, sleep } from './recordings.mjs'

const out = (s) => process.stdout.write(s)
const fail = (lines, code) => {
  process.stderr.write(lines.map((l) => l + '\n').join(''))
  process.exit(code)
}
const closed = (why) =>
  fail(
    [
      why,
      'rsync: connection unexpectedly closed (0 bytes received so far) [sender]',
      'rsync error: unexplained error (code 255) at io.c(232) [sender=3.2.7]',
    ],
    255,
  )
const fileIo = (why) => fail([why, 'rsync error: error in file IO (code 11) at main.c(791) [Receiver=3.2.7]'], 11)

// ---- arguments ----
const args = process.argv.slice(2)
let rsh = process.env.RSYNC_RSH || 'ssh'
let mkpath = false
const paths = []
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === '--') {
    paths.push(...args.slice(i + 1))
    break
  }
  if (a === '-e' || a === '--rsh') rsh = args[++i] ?? ''
  else if (a.startsWith('--rsh=')) rsh = a.slice('--rsh='.length)
  else if (a === '--mkpath') mkpath = true
  else if (/^--(progress|copy-unsafe-links|archive|verbose)$/.test(a) || /^-[avhPzr]+$/.test(a)) continue
  else if (a.startsWith('-'))
    fail(
      [`rsync: ${a}: unknown option`, 'rsync error: syntax or usage error (code 1) at main.c(1795) [client=3.2.7]'],
      1,
    )
  else paths.push(a)
}
if (paths.length < 2) fail(['rsync error: syntax or usage error (code 1) at main.c(1795) [client=3.2.7]'], 1)
const dest = paths.pop()
const remote = /^(?:([^@/]+)@)?(\[[^\]]+\]|[^:/]+):(.*)$/.exec(dest)
if (!remote) fail(['rsync (simulated): only copies to another host'], 1)
const user = remote[1] ?? process.env.USER
const host = remote[2].replace(/^\[|\]$/g, '')
const port = Number(/(?:^|\s)-p\s*(\d+)/.exec(rsh)?.[1] ?? 22)

// ---- the network ----
if (fs.existsSync(path.join(process.env.SIM_STATE ?? '', 'peer_unreachable')))
  closed(`ssh: connect to host ${host} port ${port}: No route to host`)
const peer = JSON.parse(process.env.SIM_CLUSTER ?? '[]').find(
  (n) =>
    n.name !== process.env.SIM_NODE &&
    ((host === n.lanIp && port === 22) || (host === n.address && n.port > 0 && port === n.port)),
)
if (!peer) closed(`ssh: connect to host ${host} port ${port}: Connection refused`)
if (user !== peer.user) closed(`${user}@${host}: Permission denied (publickey).`)

// ---- where it lands on the peer ----
const peerHome = peer.home
const peerDir = path.dirname(peerHome)
const ownDir = path.dirname(process.env.HOME ?? '')
const inside = (p, dir) => p === dir || p.startsWith(dir + path.sep)
const wanted = remote[3] === '' ? '.' : remote[3]
let target = null
if (!path.isAbsolute(wanted)) target = path.join(peerHome, wanted)
else if (inside(path.resolve(wanted), peerDir)) target = path.resolve(wanted)
else if (inside(path.resolve(wanted), ownDir) && process.env.USER === user)
  target = path.join(peerDir, path.relative(ownDir, path.resolve(wanted)))
if (target === null) fileIo(`rsync: [Receiver] mkdir "${wanted}" failed: Permission denied (13)`)
let created = 0
if (!fs.existsSync(target)) {
  let missing = target
  while (!fs.existsSync(missing)) {
    created++
    missing = path.dirname(missing)
  }
  if (!mkpath && created > 1) fileIo(`rsync: [Receiver] mkdir "${wanted}" failed: No such file or directory (2)`)
  fs.mkdirSync(target, { recursive: true })
}

// ---- the file list, as rsync -v prints it ----
const entries = []
const walk = (abs, name) => {
  const st = fs.statSync(abs)
  if (!st.isDirectory()) return entries.push({ name, file: true, size: st.size })
  entries.push({ name: `${name}/`, file: false, size: 0 })
  for (const child of fs.readdirSync(abs).sort()) walk(path.join(abs, child), name === '.' ? child : `${name}/${child}`)
}
for (const src of paths) {
  if (!fs.existsSync(src))
    fail(
      [
        `rsync: [sender] change_dir "${path.resolve(src)}" failed: No such file or directory (2)`,
        'rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1338) [sender=3.2.7]',
      ],
      23,
    )
  walk(src, src.endsWith('/') ? '.' : path.basename(src))
}

// ---- the replay ----
const recording = fs.readFileSync(RSYNC_RECORDING, 'utf8')
const patterns = rsyncPattern(recording).sort((a, b) => b.size - a.size)
const bySize = entries.filter((e) => e.file).sort((a, b) => b.size - a.size)
const patternOf = (e) => patterns[Math.min(bySize.indexOf(e), patterns.length - 1)]
const delay = Number(knob('SIM_DOWNLOAD_DELAY', 'download_delay', '0.1'))
const rate = pacedRate()
out('sending incremental file list\r\n')
if (mkpath && created > 0) out(`created ${created} director${created === 1 ? 'y' : 'ies'} for ${wanted}\r\n`)
let xfr = 0
for (const [k, e] of entries.entries()) {
  out(`${e.name}\r\n`)
  if (!e.file) continue
  const closing = () => ({ xfr: ++xfr, left: entries.length - k - 1, total: entries.length })
  if (rate !== null) {
    const start = Date.now()
    const draws = rsyncPaced(e.size, rate)
    for (const [j, { bytes, draw, at }] of draws.entries()) {
      await sleep(at - (Date.now() - start) / 1000)
      out(rsyncLine(bytes, draw, j === draws.length - 1 ? closing() : null))
    }
    continue
  }
  const { draws, size } = patternOf(e)
  for (const [j, recorded] of draws.entries()) {
    const last = j === draws.length - 1
    const { bytes, draw } = replayDraw(recorded, e.size, size, last)
    out(rsyncLine(bytes, draw, last ? closing() : null))
    if (!last) await sleep(delay)
  }
}
for (const src of paths) {
  const r = spawnSync('cp', ['-a', src.endsWith('/') ? `${src}.` : src, target + path.sep], { encoding: 'utf8' })
  if (r.status !== 0) fileIo(`rsync: [Receiver] write failed: ${r.stderr.trim()}`)
}

// The summary with the recorded overhead and speed.
const sent0 = /sent ([\d,]+) bytes {2}received ([\d,]+) bytes {2}([\d,.]+) bytes\/sec/.exec(recording)
const size0 = Number(/total size is ([\d,]+)/.exec(recording)[1].replace(/,/g, ''))
const num = (s) => Number(s.replace(/,/g, ''))
const total = entries.reduce((s, e) => s + e.size, 0)
const sent = total + (num(sent0[1]) - size0)
const received = num(sent0[2])
const seconds = rate !== null ? (sent + received) / rate : (num(sent0[1]) + received) / num(sent0[3])
const speed = ((sent + received) / seconds).toLocaleString('en-US', {
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
})
out(`\r\nsent ${commas(sent)} bytes  received ${commas(received)} bytes  ${speed} bytes/sec\r\n`)
out(`total size is ${commas(total)}  speedup is ${(total / (sent + received)).toFixed(2)}\r\n`)
