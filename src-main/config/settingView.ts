import { z } from 'zod'
import { isSettingName, type SettingGroup, type SettingSpec } from './settingSpecs'

/* The Settings page's shapes: a setting as the page reads it, and the changes it sends. */

export const SettingSource = z.enum(['default', 'file', 'environment'])
export type SettingSource = z.infer<typeof SettingSource>

/** One setting as the Settings view sees it: secrets masked, with where the value came from. */
export const SettingView = z.object({
  name: z.string(),
  value: z.string(),
  source: SettingSource,
  editable: z.boolean(),
  secret: z.boolean(),
  group: z.string(),
  description: z.string(),
  kind: z.string(),
  label: z.string(),
  /** One line of help for the page. */
  help: z.string(),
  /** Inclusive bounds of a number, null when not a bounded number. */
  range: z.tuple([z.number(), z.number()]).nullable(),
  /** Why the page cannot change it (set by the environment), null when it can. */
  locked_reason: z.string().nullable(),
  /** A value saved to the settings file that takes effect at the next start (masked when secret). */
  pending: z.string().nullable(),
})
export type SettingView = z.infer<typeof SettingView>

/**
 * Settings to save, by name. Every key must be a setting (own property): the check runs on the
 * raw object because a zod record silently drops a `__proto__` key instead of refusing it.
 */
export const SettingChanges = z.preprocess(
  (raw: Record<string, string>, ctx) => {
    if (typeof raw === 'object' && raw !== null && !Array.isArray(raw))
      for (const key of Object.keys(raw))
        if (!isSettingName(key)) ctx.addIssue({ code: 'custom', message: 'unknown setting', path: [key], input: raw })
    return raw
  },
  z.record(z.string(), z.string().max(4096)),
)

/** The page group of a setting; the first layout's `server` and `paths` read as Advanced. */
export function settingGroup(spec: SettingSpec): SettingGroup {
  return spec.group === 'server' || spec.group === 'paths' ? 'advanced' : spec.group
}

/** The human label: the spec's own, else the name in words (`SWAP_HOLD_S` → "Swap hold s"). */
export function settingLabel(name: string, spec: SettingSpec): string {
  if (spec.label) return spec.label
  const words = name.toLowerCase().replace(/_/g, ' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** The rule a number or address must follow, in words; null where the validator's own message says it. */
export function settingRule(spec: SettingSpec): string | null {
  if (spec.kind === 'port') return 'must be a whole number between 1 and 65535 (a port)'
  if (spec.kind === 'int' && spec.range) return `must be a whole number between ${spec.range[0]} and ${spec.range[1]}`
  if (spec.kind === 'int') return 'must be a whole number'
  if (spec.kind === 'url') return 'must be an http:// or https:// address'
  return null
}
