import { expect, test } from '@playwright/test'
import { logIn } from './login'

test('Settings: a bad value is explained under its field; Save then Restart to apply applies it', async ({ page }) => {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  await logIn(page)
  await page.getByTestId('nav-settings').click()

  // Grouped by purpose, with the variable name in small type under a human label.
  for (const g of ['nodes', 'services', 'gateway', 'licensing', 'security', 'advanced'])
    await expect(page.getByTestId(`settings-group-${g}`)).toBeVisible()
  // A long group starts folded even on a wide screen; its summary opens it.
  const group = page.getByTestId('settings-group-services')
  await expect(group).not.toHaveAttribute('open')
  await group.locator('summary').click()
  const hold = page.getByTestId('setting-SWAP_HOLD_S')
  await expect(hold).toContainText('Hold requests during a swap (seconds)')
  await expect(hold.locator('code.setting-var')).toHaveText('SWAP_HOLD_S')

  // The demo sets PORT in the environment: the field is locked and says why.
  const port = page.getByTestId('setting-PORT')
  await expect(port.locator('input')).toBeDisabled()
  await expect(port.getByTestId('locked-reason')).toContainText('environment variable PORT')

  const input = hold.locator('input')
  await input.fill('soon')
  await expect(hold.getByTestId('field-error')).toHaveText(
    'Hold requests during a swap (seconds) must be a whole number between 0 and 86400',
  )
  await expect(page.getByTestId('settings-save')).toBeDisabled()

  await input.fill('120')
  await expect(hold.getByTestId('field-error')).toHaveCount(0)
  await expect(page.getByTestId('save-bar')).toContainText('Hold requests during a swap (seconds): 600 → 120')
  await page.getByTestId('settings-save').click()
  await expect(page.getByTestId('settings-notice')).toContainText('Saved')
  await expect(hold.getByTestId('pending')).toBeVisible()
  await expect(input).toHaveValue('120')

  await page.getByTestId('settings-restart').click()
  await expect(page.getByTestId('settings-notice')).toContainText('Services restarted')
  await expect(hold.getByTestId('pending')).toHaveCount(0)
  await expect(hold.getByText('saved', { exact: true })).toBeVisible()
  await expect(input).toHaveValue('120')

  // The restarted services answer: another view loads its data.
  await page.getByTestId('nav-gateway').click()
  await expect(page.getByTestId('upstream-llm').getByTestId('upstream-state')).toHaveText('up')
  expect(errors).toEqual([])
})
