import type { Plugin } from 'vite'
import { contract } from '../src-main/contract'
import { splitRoute } from '../src-main/contract/define'
import { SWAP_PHASE_TITLES } from '../src-main/contract/models'
import { WebhookEventName } from '../src-main/contract/licensing'
import { MODEL_REPO_RULES, type TextRule } from '../src-main/contract/schemas'

/**
 * The renderer imports only types from the contract; what it needs at run time (each method's
 * verb and path, labels, enum lists, form rules) is written here as plain data when the renderer
 * is built, so the dashboard ships no zod and no settings table. Its types are declared in
 * src-renderer/contract-data.d.ts from the contract's own types.
 */
export const CONTRACT_DATA_MODULE = 'virtual:contract-data'
const RESOLVED = `\0${CONTRACT_DATA_MODULE}`

const rulesData = (rules: readonly TextRule[]) =>
  rules.map((r) => ({ pattern: r.pattern.source, flags: r.pattern.flags, message: r.message }))

/** What the module exports; routes keep the contract's order. */
export function contractData() {
  const routes = Object.fromEntries(
    Object.entries(contract).map(([name, def]) => {
      const { verb, path } = splitRoute(def.http)
      return [name, [verb, path]]
    }),
  )
  return {
    routes,
    swapPhaseTitles: SWAP_PHASE_TITLES,
    webhookEventNames: WebhookEventName.options,
    modelRepoRules: rulesData(MODEL_REPO_RULES),
  }
}

/** The module's source: one `export const` per datum. */
export function contractDataSource(): string {
  return Object.entries(contractData())
    .map(([name, value]) => `export const ${name} = ${JSON.stringify(value)}\n`)
    .join('')
}

/** Serves the module to the renderer build and the dev server (vitest aliases contractDataForTests.ts). */
export function contractDataPlugin(): Plugin {
  return {
    name: 'contract-data',
    resolveId: (id) => (id === CONTRACT_DATA_MODULE ? RESOLVED : null),
    load: (id) => (id === RESOLVED ? contractDataSource() : null),
  }
}
