import type { Handlers } from '../contract/define'
import type { modelsContract } from '../contract/models'
import type { SwapManager } from './swap'
import type { CatalogReader } from './types'
import type { LaunchValidator } from './validate'

export interface SwapHandlerDeps {
  readonly swap: SwapManager
  readonly validator: LaunchValidator
  readonly catalog: CatalogReader
}

/** Launch validation, starting a swap, and the swap state. */
export function swapHandlers(
  d: SwapHandlerDeps,
): Pick<Handlers<typeof modelsContract>, 'validateLaunch' | 'startSwap' | 'swapState'> {
  return {
    validateLaunch: async ({ key, mode }, ctx) => {
      const entry = d.catalog.get(key)
      const run = mode ?? (entry.def.mode === 'cluster' ? 'cluster' : 'solo')
      return d.validator.validate(entry, run, ctx.signal)
    },
    startSwap: async ({ key, mode, confirm_no_fit }) => d.swap.begin(key, mode, confirm_no_fit === true),
    swapState: async () => d.swap.view(),
  }
}
