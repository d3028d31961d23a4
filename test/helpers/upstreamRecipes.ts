import fs from 'node:fs'
import path from 'node:path'

/**
 * The launcher's published recipes at upstream 358bf26 and its runner's recorded dry runs of them
 * (test/fixtures/recipes/upstream-358bf26/README.md).
 */
export const UPSTREAM_DIR = path.resolve(__dirname, '../fixtures/recipes/upstream-358bf26')
export const UPSTREAM_RECIPES = path.join(UPSTREAM_DIR, 'recipes')

/** One recorded `run-recipe.py <recipe> <args>` run. */
export interface DryRun {
  readonly recipe: string
  readonly args: readonly string[]
  readonly exit: number
  readonly stdout: string
}

export const dryRuns = JSON.parse(fs.readFileSync(path.join(UPSTREAM_DIR, 'dry-runs.json'), 'utf8')) as DryRun[]

/** The text of a recipe under recipes/. */
export function upstreamRecipe(rel: string): string {
  return fs.readFileSync(path.join(UPSTREAM_RECIPES, rel), 'utf8')
}
