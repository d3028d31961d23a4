import fs from 'node:fs'
import path from 'node:path'

/** The copy a malformed state file was moved aside to (`<file>.corrupt-<UTC time>`), or null. */
export function keptAsideCopy(file: string): string | null {
  const base = path.basename(file)
  const pattern = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.corrupt-\\d{8}T\\d{6}Z(-\\d+)?$`)
  const names = fs.readdirSync(path.dirname(file)).filter((n) => pattern.test(n))
  return names.length > 0 ? path.join(path.dirname(file), names.sort()[0]!) : null
}
