import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook } from './looks'
import { startOwnDemo, type OwnDemo } from './ownDemo'

// Issue 46, item 1: the Gateway's Try it picks among the served models (two placements: node1's and
// node2's), the chat asks the one picked, the snippets name it, and the request log says which
// placement answered. One demo of its own with DEMO_PLACEMENTS=two.
const PORT = Number(process.env.E2E_GATEWAY_PLACEMENTS_PORT ?? 22_001)
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** The demo's second placement (test/sim/demoState.ts, DEMO_PLACEMENTS=two). */
const ON_NODE2 = 'nvidia/Gemma-4-26B-A4B-NVFP4'

let demo: OwnDemo

test.describe.configure({ mode: 'serial' })
test.use({ baseURL: `http://127.0.0.1:${PORT}` })

test.beforeAll(async () => {
  test.setTimeout(90_000)
  demo = await startOwnDemo(PORT, 'e2e-gateway-placements-data', { DEMO_PLACEMENTS: 'two', DEMO_LOAD_MS: '1000' })
  await demo.printed('Placements:  placing')
})

test.afterAll(async () => {
  await demo?.stop()
})

/** The served models as the gateway's /v1/models lists them for the llm routes, once node2's answers too. */
async function servedLlmModels(page: Page): Promise<string[]> {
  let ids: string[] = []
  await expect
    .poll(
      async () => {
        const res = await page.request.get('/v1/models', { headers: auth })
        const body = (await res.json()) as { data: { id: string; owned_by: string }[] }
        ids = body.data.filter((m) => m.owned_by === 'llm').map((m) => m.id)
        return ids.includes(ON_NODE2)
      },
      { timeout: 60_000, intervals: [500] },
    )
    .toBe(true)
  return ids
}

test('Try it sends the picked model, the snippets name it, the log shows the placement', async ({ page }) => {
  test.setTimeout(120_000)
  const served = await servedLlmModels(page)
  const placed = (await (await page.request.get('/api/placements', { headers: auth })).json()) as {
    placements: { id: string; served: string }[]
  }
  const onNode1 = placed.placements.find((p) => p.id === 'node1')!.served
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'gateway')
  const picker = page.getByLabel('Model', { exact: true })
  // The picker offers what /v1/models lists (every name each engine serves), each with its placement.
  await expect(picker.locator('option')).toHaveCount(served.length, { timeout: 15_000 })
  await expect(picker.locator('option')).toContainText([`${onNode1} (node1)`, `${ON_NODE2} (node2)`])
  const values = await picker.locator('option').evaluateAll((os) => os.map((o) => o.getAttribute('value')))
  expect(values).toEqual(served)
  const chat = page.locator('form.gw-play').first()
  const logRow = page.locator('table.gw-log tbody tr').first()

  for (const [i, look] of LOOKS.entries()) {
    await test.step(lookName(look), async () => {
      await useLook(page, look)
      // Each look picks the other model, so every pick is a change the request must follow.
      const [model, placement] = i % 2 === 0 ? [ON_NODE2, 'node2'] : [onNode1, 'node1']
      await picker.selectOption(model)
      await expect(page.getByTestId('snippet-chat').locator('pre')).toContainText(`"model": "${model}"`)
      await expect(page.getByTestId('snippet-python').locator('pre')).toContainText(`model="${model}"`)

      const sent = page.waitForRequest((r) => r.url().endsWith('/api/gateway/playground/chat'))
      await chat.getByRole('button', { name: 'Send' }).click()
      expect((await sent).postDataJSON()).toMatchObject({ model })
      // The answer says which model and placement answered.
      await expect(chat.locator('p.muted')).toContainText(`${model} on ${placement}`, { timeout: 15_000 })
      await expect(chat.locator('output')).toContainText('You said:')
      // The request log's newest row is this call, with the placement that served it.
      await expect(logRow.getByTestId('from-playground')).toBeVisible({ timeout: 10_000 })
      await expect(logRow.getByTestId('log-placement')).toHaveText(placement, { timeout: 10_000 })
      await expect(logRow).toContainText('/api/gateway/playground/chat')
      await picker.scrollIntoViewIfNeeded()
      await expectLook(page, look, picker, logRow.getByTestId('log-placement'))
    })
  }
})

test('each Copy button says what it copies', async ({ page }) => {
  await useLook(page, LOOKS[0]!)
  await logIn(page)
  await openView(page, 'gateway')
  for (const name of [
    'Copy the streaming chat curl command',
    'Copy the speech curl command',
    'Copy the transcription curl command',
    'Copy the Python snippet',
  ])
    await expect(page.getByRole('button', { name, exact: true })).toHaveCount(1)
  await expect(page.getByRole('button', { name: /^Copy the base URL http:\/\/.+\/v1$/ }).first()).toBeVisible()
  await expect(page.getByRole('button', { name: 'Copy', exact: true })).toHaveCount(0)
})
