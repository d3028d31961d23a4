import type { Handlers } from '../contract/define'
import type { modelsContract } from '../contract/models'
import type { placementsContract } from '../contract/placements'
import { LaunchRefused, nodesForMode, NODE1_SOLO, type PlacementNodes } from './launch'
import type { PlacementManager } from './placements'
import type { EngineMetrics } from './engineMetrics'
import type { CatalogReader } from './types'
import type { LaunchValidator } from './validate'
import type { NodeName } from '../contract/schemas'
import { badInput } from '../contract/errors'

export interface PlacementHandlerDeps {
  readonly placements: PlacementManager
  readonly validator: LaunchValidator
  readonly catalog: CatalogReader
  readonly nodeNames: () => readonly NodeName[]
  readonly engineMetrics: Pick<EngineMetrics, 'view'>
}

/** Launch validation, the spec's single-llm swap and its state, and the placements. */
export function placementHandlers(
  d: PlacementHandlerDeps,
): Pick<Handlers<typeof modelsContract>, 'validateLaunch' | 'startSwap' | 'swapState'> &
  Handlers<typeof placementsContract> {
  return {
    validateLaunch: async ({ key, mode }, ctx) => {
      const entry = d.catalog.get(key)
      const run = mode ?? (entry.def.mode === 'cluster' ? 'cluster' : 'solo')
      let on: PlacementNodes = NODE1_SOLO
      try {
        if (run === 'cluster') on = { nodes: nodesForMode(entry.launchArgs, run, d.nodeNames()), addresses: null }
      } catch (err) {
        if (err instanceof LaunchRefused) throw badInput(`${entry.def.name} cannot be launched ${run}: ${err.message}`)
        throw err
      }
      return d.validator.validate(entry, on, ctx.signal)
    },
    startSwap: async ({ key, mode, confirm_no_fit }) => d.placements.begin(key, mode, confirm_no_fit === true),
    swapState: async () => d.placements.swapView(),
    listPlacements: async () => d.placements.placementsView(),
    startPlacement: async ({ key, nodes, displace, confirm_no_fit, ttl_min }) =>
      d.placements.placeKept(key, nodes, {
        displace: displace === true,
        confirmNoFit: confirm_no_fit === true,
        ttlMin: ttl_min ?? null,
      }),
    retryPlacement: async ({ id }) => d.placements.retry(id),
    stopPlacement: async ({ id }) => d.placements.stopPlacement(id),
    listEngineLoad: async () => d.engineMetrics.view(),
  }
}
