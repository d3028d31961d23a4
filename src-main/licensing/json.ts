/** Reading the JSON text columns of the licensing database: a malformed value reads as empty, never a crash. */
import { z } from 'zod'
import { AccessEntitlements, EntitlementDef } from '../contract/licensing'

const StringList = z.array(z.string())
const Catalog = z.array(EntitlementDef)

export function parseStringList(text: string | null | undefined): string[] {
  try {
    const r = StringList.safeParse(JSON.parse(text ?? '[]'))
    return r.success ? r.data : []
  } catch {
    return []
  }
}

export function parseCatalog(text: string | null | undefined): EntitlementDef[] {
  try {
    const r = Catalog.safeParse(JSON.parse(text ?? '[]'))
    return r.success ? r.data : []
  } catch {
    return []
  }
}

/** Epoch ms → RFC 3339 (the buyer API's time format). */
export const iso = (ms: number): string => new Date(ms).toISOString()

/** A tier's stored access entitlements; NULL or a malformed value reads as none. */
export function parseAccess(text: string | null | undefined): AccessEntitlements | null {
  if (text === null || text === undefined) return null
  try {
    const r = AccessEntitlements.safeParse(JSON.parse(text))
    return r.success ? r.data : null
  } catch {
    return null
  }
}
