import fs from 'node:fs'
import path from 'node:path'
import { CONTAINER_OVERLAY_DIR, OVERLAY_FILES, defaultOverlayDir } from '../../src-main/services/speechPatches'
import type { SimNode } from './cluster'

/**
 * The sim asr container's own files (spec 1, 9.3). The docker shim maps a container's absolute
 * paths under `$SIM_STATE/docker/rootfs/<name>`; an "upgrade" resets that directory to what the
 * new image ships (its own, older modules at the overlay paths) and restarts the container, so
 * the speech patches show drift until they are reapplied.
 */
export const ASR_IMAGE_FILES: Readonly<Record<string, string>> = {
  '/app/server.py': '"""The image\'s own asr server."""\n',
  '/app/diarizer.py': '"""The image\'s own diarizer (before the overlay)."""\n',
  '/app/asr_app.py': "from server import app  # the image's entry, without diarize-chunk\n",
}

/** The directory holding a container's files in the sim. */
export function containerRoot(node: SimNode, container: string): string {
  return path.join(node.state, 'docker', 'rootfs', container)
}

/** The bytes of a file inside the container, or null when it is absent. */
export function readContainerFile(node: SimNode, container: string, file: string): Buffer | null {
  try {
    return fs.readFileSync(path.join(containerRoot(node, container), path.posix.normalize('/' + file)))
  } catch {
    return null
  }
}

/**
 * The container as a set-up cluster has it: the image's own files with the shipped overlays
 * copied over them (what Reapply patches leaves behind), so the speech patches read in sync.
 */
export function applyShippedOverlays(node: SimNode, container = 'asr', overlayDir = defaultOverlayDir()): void {
  const root = containerRoot(node, container)
  const files: Record<string, Buffer | string> = { ...ASR_IMAGE_FILES }
  for (const name of OVERLAY_FILES)
    files[`${CONTAINER_OVERLAY_DIR}/${name}`] = fs.readFileSync(path.join(overlayDir, name))
  for (const [p, content] of Object.entries(files)) {
    const target = path.join(root, path.posix.normalize('/' + p))
    fs.mkdirSync(path.dirname(target), { recursive: true })
    fs.writeFileSync(target, content)
  }
}

/** Simulates an asr image upgrade: the container's files become the image's, then it restarts. */
export function upgradeContainer(node: SimNode, container = 'asr', files = ASR_IMAGE_FILES): void {
  const root = containerRoot(node, container)
  fs.rmSync(root, { recursive: true, force: true })
  for (const [p, content] of Object.entries(files)) {
    const target = path.join(root, path.posix.normalize('/' + p))
    fs.mkdirSync(path.dirname(target), { recursive: true })
    fs.writeFileSync(target, content)
  }
  const r = node.runLocal(`docker restart ${container}`)
  if (r.code !== 0) throw new Error(`docker restart ${container}: ${r.stderr}`)
}

/** How many times the container has (re)started, from the sim docker's event log. */
export function startCount(node: SimNode, container = 'asr'): number {
  let log: string
  try {
    log = fs.readFileSync(path.join(node.state, 'docker', 'events.log'), 'utf8')
  } catch {
    return 0
  }
  return log.split('\n').filter((l) => l.split(' ')[1] === container && l.split(' ')[2] === 'running').length
}
