import { expect, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'

const auth = { authorization: `Bearer ${E2E_TOKEN}` }

/** Waits (bounded) until the daemon's `route` answers with `field` null: nothing of that kind in progress. */
async function settled(page: Page, route: string, field: string): Promise<void> {
  await expect
    .poll(
      async () => ((await (await page.request.get(route, { headers: auth })).json()) as Record<string, unknown>)[field],
      { timeout: 45_000 },
    )
    .toBeNull()
}

/** No placement job is changing what runs where. */
export async function placementsIdle(page: Page): Promise<void> {
  await settled(page, '/api/placements', 'changing')
}

/** No swap is in progress. */
export async function swapIdle(page: Page): Promise<void> {
  await settled(page, '/api/swap', 'swapping')
}
