import { expect, test } from '@playwright/test'
import { logIn } from './login'
import { openView } from './looks'

/** Issue 43 in the Gateway view: speakers by name (up to 4 clips) and the transcript as .srt and .vtt. */
test('the transcription playground offers named speakers and subtitle downloads', async ({ page }) => {
  await logIn(page)
  await openView(page, 'gateway')
  const add = page.getByTestId('add-speaker')
  for (let i = 0; i < 4; i++) await add.click()
  await expect(page.getByLabel('Speaker 4 name')).toBeVisible()
  await expect(add).toBeDisabled()
  await page.getByRole('button', { name: 'Remove speaker 4' }).click()
  await expect(add).toBeEnabled()
  await page.getByTestId('sample-clip').click()
  await expect(page.locator('.gw-segments li').first()).toBeVisible({ timeout: 20_000 })
  const downloads = page.getByTestId('caption-downloads')
  const [srt] = await Promise.all([page.waitForEvent('download'), downloads.getByText('Download .srt').click()])
  expect(srt.suggestedFilename()).toBe('sample-test-tone.srt')
  const text = await (await srt.createReadStream()).toArray()
  expect(Buffer.concat(text).toString('utf8')).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> .*\n\[Speaker_1\] /)
  const [vtt] = await Promise.all([page.waitForEvent('download'), downloads.getByText('Download .vtt').click()])
  expect(vtt.suggestedFilename()).toBe('sample-test-tone.vtt')
})
