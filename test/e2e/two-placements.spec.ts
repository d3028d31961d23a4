import { expect, test, type Page } from '@playwright/test'
import { E2E_TOKEN } from '../../playwright.config'
import { placementsIdle } from './idle'
import { logIn } from './login'
import { LOOKS, expectLook, lookName, openView, useLook, type Look } from './looks'
import { useOwnDemo } from './ownDemo'

// Two models placed (DEMO_PLACEMENTS=two: node1's, and the second solo on node2), one demo for both
// of issue 46's views of them:
// - the Gateway's Try it picks among the served models, the chat asks the one picked, the snippets
//   name it, and the request log says which placement answered (item 1);
// - every placement is a service: node2's engine is llm@node2, named by its placement, with its own
//   row in the Cluster services table and its own card in Services (state, health, Restart, Logs),
//   beside node1's llm.
const PORT = Number(process.env.E2E_TWO_PLACEMENTS_PORT ?? 22_001)
const auth = { authorization: `Bearer ${E2E_TOKEN}` }
/** The demo's second placement (test/sim/demoState.ts, DEMO_PLACEMENTS=two). */
const ON_NODE2 = 'nvidia/Gemma-4-26B-A4B-NVFP4'

useOwnDemo(
  PORT,
  'e2e-two-placements-data',
  { DEMO_PLACEMENTS: 'two', DEMO_LOAD_MS: '3000' },
  { ready: 'Placements:  placing', startTimeoutMs: 120_000 },
)

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

/** Both placements ready, and the status has node2's engine as a Healthy service. */
async function twoPlaced(page: Page): Promise<void> {
  await placementsIdle(page)
  await expect
    .poll(
      async () => {
        const st = (await (await page.request.get('/api/status', { headers: auth })).json()) as {
          placements: { name: string; label: string }[]
        }
        return st.placements.map((p) => `${p.name} ${p.label}`)
      },
      { timeout: 60_000 },
    )
    .toEqual(['llm@node2 Healthy'])
}

async function expectClusterRows(page: Page, look: Look): Promise<void> {
  await openView(page, 'cluster')
  const table = page.getByTestId('cluster-services')
  const rows = table.locator('tbody tr')
  await expect(rows.locator('td[data-label="Service"] .mono')).toHaveText(['llm', 'llm@node2', 'asr', 'tts'], {
    timeout: 20_000,
  })
  const engine = rows.nth(1)
  await expect(engine.getByTestId('service-placement')).toContainText(ON_NODE2)
  await expect(engine.getByTestId('service-placement')).toContainText('on node2, solo')
  await expect(engine.locator('td[data-label="Status"]')).toContainText('Healthy')
  await expect(engine.locator('td[data-label="Model"]')).toHaveText(ON_NODE2)
  // A placement is started and stopped as a placement: its row offers Restart only.
  await expect(engine.getByRole('button', { name: 'Restart' })).toBeVisible()
  await expect(engine.getByRole('button', { name: 'Stop', exact: true })).toHaveCount(0)
  await expect(rows.nth(0).getByRole('button', { name: 'Stop', exact: true })).toBeVisible()
  await expectLook(page, look, engine.locator('td[data-label="Service"]'), engine.locator('td[data-label="Status"]'))
}

async function expectServiceCard(page: Page, look: Look): Promise<void> {
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service llm@node2' })
  await expect(card).toBeVisible({ timeout: 20_000 })
  await expect(page.getByRole('article', { name: 'service llm', exact: true })).toBeVisible()
  await expect(card.getByTestId('service-placement')).toHaveText(
    /^nvidia\/Gemma-4-26B-A4B-NVFP4 (\(.+\) )?on node2, solo$/,
  )
  await expect(card.locator('header .badge').first()).toHaveText('Healthy')
  await expect(card).toContainText('OK in')
  await expect(card.getByRole('button', { name: 'Restart' })).toBeVisible()
  await expect(card.getByRole('button', { name: 'Start', exact: true })).toHaveCount(0)
  await card.getByRole('button', { name: 'Logs' }).click()
  await expect(card.locator('pre.log')).toBeVisible()
  await expect(card.locator('pre.log')).not.toHaveText('(no output)')
  await expectLook(page, look, card.getByTestId('service-placement'), card.locator('header .badge').first())
}

for (const look of LOOKS) {
  test(`two placements are two services in Cluster and in Services (${lookName(look)})`, async ({ page }) => {
    // The first waits for node2's placement to load; a busy machine is slow to draw.
    test.setTimeout(150_000)
    await useLook(page, look)
    await logIn(page)
    await twoPlaced(page)
    await expectClusterRows(page, look)
    await expectServiceCard(page, look)
  })
}

test("Restart of node2's engine places it again on node2 and it comes back Healthy", async ({ page }) => {
  test.setTimeout(150_000)
  await useLook(
    page,
    LOOKS.find((l) => l.width === 1440 && l.theme === 'light')!,
  )
  await logIn(page)
  await twoPlaced(page)
  await openView(page, 'services')
  const card = page.getByRole('article', { name: 'service llm@node2' })
  await card.getByRole('button', { name: 'Restart' }).click()
  await expect(card.getByRole('alertdialog')).toContainText('is placed again on node2, solo')
  await card.getByRole('button', { name: 'Confirm' }).click()
  await expect(card.getByRole('status').last()).toContainText(/restart: started .*re-placing it on node2 \(job /)
  await twoPlaced(page)
  await expect(card.locator('details summary')).toHaveText('Recent changes')
})
