/** Reading the JSON text columns of the licensing database: a malformed value reads as its fallback, never a crash. */
import { z } from 'zod'
import { AccessEntitlements, EntitlementDef } from '../contract/licensing'

/** `text` parsed as JSON and checked against `schema`; NULL, malformed JSON or a wrong shape gives `fallback`. */
function parseColumn<T, F>(schema: z.ZodType<T>, text: string | null | undefined, fallback: F): T | F {
  if (text === null || text === undefined) return fallback
  try {
    const r = schema.safeParse(JSON.parse(text))
    return r.success ? r.data : fallback
  } catch {
    return fallback
  }
}

const StringList = z.array(z.string())
const Catalog = z.array(EntitlementDef)

export const parseStringList = (text: string | null | undefined): string[] => parseColumn(StringList, text, [])

export const parseCatalog = (text: string | null | undefined): EntitlementDef[] => parseColumn(Catalog, text, [])

/** A tier's stored access entitlements; NULL or a malformed value reads as none. */
export const parseAccess = (text: string | null | undefined): AccessEntitlements | null =>
  parseColumn(AccessEntitlements, text, null)

/** Epoch ms → RFC 3339 (the buyer API's time format). */
export const iso = (ms: number): string => new Date(ms).toISOString()
