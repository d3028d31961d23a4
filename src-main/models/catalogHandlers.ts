import type { Handlers } from '../contract/define'
import type { ModelView, modelsContract } from '../contract/models'
import type { FitEstimator } from './fit'
import type { Recipes } from './recipes'
import type { ModelCatalog } from './catalog'
import type { CatalogEntry, SwapStatus } from './types'

type CatalogMethods =
  'listModels' | 'addModel' | 'deleteModel' | 'setKnobs' | 'modelFit' | 'listRecipes' | 'importRecipe'

export interface CatalogHandlerDeps {
  readonly catalog: ModelCatalog
  readonly fit: FitEstimator
  readonly recipes: Recipes
  readonly swap: SwapStatus
}

/** A catalog entry as the API shows it: its definition, tags, knobs in force, launch args, loaded or not. */
export function modelView(entry: CatalogEntry, loadedKey: string | null, placedOn: readonly string[] = []): ModelView {
  return {
    ...entry.def,
    tags: [...entry.tags],
    effective_knobs: entry.effectiveKnobs,
    launch_args: [...entry.launchArgs],
    loaded: entry.def.key === loadedKey,
    placed_on: [...placedOn],
  }
}

/** The catalog's methods: list, add, delete, knobs, fit estimate, launcher recipes and their import. */
export function catalogHandlers(deps: CatalogHandlerDeps): Pick<Handlers<typeof modelsContract>, CatalogMethods> {
  const { catalog, fit, recipes, swap } = deps
  const view = (entry: CatalogEntry): ModelView =>
    modelView(entry, swap.loaded()?.key ?? null, swap.placementsOf?.(entry.def.key) ?? [])
  return {
    listModels: async () => catalog.list().map(view),
    addModel: async (def) => view(catalog.add(def)),
    deleteModel: async ({ key }) => {
      catalog.remove(key)
      return { deleted: true as const }
    },
    setKnobs: async ({ key, knobs }) => view(catalog.setKnobs(key, knobs)),
    modelFit: async ({ key, mode, nodes }) => fit.estimate(key, mode, nodes),
    listRecipes: async () => recipes.list(),
    importRecipe: async ({ name }) => view(catalog.add(await recipes.toModelDef(name))),
  }
}
