// What `docker exec` runs against a container's own files in the sim: the speech patches' commands
// (`sha256sum <paths>`, `sh -c 'mkdir -p <dir> && cat > <path>'` with the bytes on stdin,
// `python3 -m py_compile <paths>`, `cat <path>`) on absolute paths mapped under the container's
// directory ($SIM_STATE/docker/rootfs/<name>), with the messages and exit codes of the real tools.
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'

/** A container path inside the container's directory (`..` cannot climb out). */
function inside(root, p) {
  return path.join(root, path.posix.normalize('/' + p))
}

const unquote = (w) => (/^'[^']*'$/.test(w) ? w.slice(1, -1) : w)

function sha256sum(root, files) {
  let rc = 0
  for (const f of files) {
    try {
      const hash = crypto
        .createHash('sha256')
        .update(fs.readFileSync(inside(root, f)))
        .digest('hex')
      process.stdout.write(`${hash}  ${f}\n`)
    } catch {
      process.stderr.write(`sha256sum: ${f}: No such file or directory\n`)
      rc = 1
    }
  }
  return rc
}

function writeFromStdin(root, dir, file) {
  if (dir !== null) fs.mkdirSync(inside(root, dir), { recursive: true })
  const target = inside(root, file)
  if (!fs.existsSync(path.dirname(target))) {
    process.stderr.write(`sh: 1: cannot create ${file}: Directory nonexistent\n`)
    return 2
  }
  fs.writeFileSync(target, fs.readFileSync(0))
  return 0
}

function pyCompile(root, files) {
  // The real compiler on the mapped files; its messages name the container's paths again.
  const mapped = files.map((f) => inside(root, f))
  const r = spawnSync('python3', ['-m', 'py_compile', ...mapped], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  })
  if (r.error) {
    process.stderr.write('OCI runtime exec failed: exec: "python3": executable file not found in $PATH: unknown\n')
    return 127
  }
  const back = (s) => s.split(root).join('')
  process.stdout.write(back(r.stdout))
  process.stderr.write(back(r.stderr))
  return r.status ?? 1
}

function cat(root, files) {
  for (const f of files) {
    try {
      process.stdout.write(fs.readFileSync(inside(root, f)))
    } catch {
      process.stderr.write(`cat: ${f}: No such file or directory\n`)
      return 1
    }
  }
  return 0
}

/** Runs the command against the container's files; null when it is not one of these commands. */
export function containerFileCommand(root, argv) {
  const [cmd, ...rest] = argv
  if (cmd === 'sha256sum' && rest.length > 0) return sha256sum(root, rest)
  if (cmd === 'cat' && rest.length > 0) return cat(root, rest)
  if (cmd === 'python3' && rest[0] === '-m' && rest[1] === 'py_compile') return pyCompile(root, rest.slice(2))
  if (cmd === 'sh' && rest[0] === '-c' && rest.length === 2) {
    const m = /^(?:mkdir -p ('[^']*'|\S+) && )?cat > ('[^']*'|\S+)$/.exec(rest[1].trim())
    if (m) return writeFromStdin(root, m[1] === undefined ? null : unquote(m[1]), unquote(m[2]))
  }
  return null
}
