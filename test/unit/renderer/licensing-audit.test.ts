// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest'
import type { BackendApi, OutputOf } from '../../../src-renderer/api'
import AuditPanel from '../../../src-renderer/components/licensing/AuditPanel.vue'
import { auditSentence } from '../../../src-renderer/components/licensing/auditSentence'
import { mountWith, unmountAll } from './mount'

/** The audit log reads as sentences in the dashboard's words; the raw fields sit behind "details". */
type Entry = OutputOf<'licAdminAudit'>[number]

const entry = (over: Partial<Entry>): Entry => ({
  id: 1,
  at: Date.UTC(2026, 10, 1),
  actor: 'admin',
  action: 'license.issue',
  target_type: 'license',
  target_id: 'lic-1',
  details: {},
  via: 'http',
  client_ip: '127.0.0.1',
  user_agent: null,
  ...over,
})

describe('auditSentence', () => {
  it('says "tier" where the records say "policy"', () => {
    expect(
      auditSentence(entry({ details: { product: 'notes', policy: 'team', source: 'admin', invoice_id: null } })),
    ).toBe('Issued license lic-1 for notes on the team tier')
    expect(
      auditSentence(
        entry({
          action: 'policy.create',
          target_type: 'policy',
          target_id: 'pol-1',
          details: { product: 'notes', slug: 'team' },
        }),
      ),
    ).toBe('Created tier team of notes')
    expect(
      auditSentence(
        entry({
          action: 'policy.update',
          target_type: 'policy',
          target_id: 'pol-1',
          details: { changed: ['price', 'max_machines'] },
        }),
      ),
    ).toBe('Changed tier pol-1 (price, max machines)')
    expect(
      auditSentence(
        entry({
          action: 'product.update',
          target_type: 'product',
          target_id: 'p-1',
          details: { changed: ['name'], pinned_tiers: ['team'] },
        }),
      ),
    ).toBe('Changed product p-1 (name)')
  })

  it('reads status changes, invoices and unknown actions as sentences', () => {
    expect(auditSentence(entry({ action: 'license.revoke', details: { from: 'active', reason: 'chargeback' } }))).toBe(
      'Revoked license lic-1 (was active): chargeback',
    )
    expect(
      auditSentence(
        entry({
          action: 'invoice.flagged',
          target_type: 'invoice',
          target_id: 'inv-9',
          details: { flag: 'underpaid' },
        }),
      ),
    ).toBe('Flagged invoice inv-9: underpaid')
    expect(auditSentence(entry({ action: 'invoice.expired', target_type: 'invoice', target_id: 'inv-9' }))).toBe(
      'Invoice inv-9 expired',
    )
    expect(auditSentence(entry({ action: 'policy.frobnicate', target_type: 'policy', target_id: 'x' }))).toBe(
      'Tier frobnicate: x',
    )
  })
})

describe('Audit panel', () => {
  afterEach(() => unmountAll())

  it('shows no raw JSON until "details" is opened', async () => {
    const rows = [entry({ details: { product: 'notes', policy: 'team', source: 'admin', invoice_id: null } })]
    const api = {
      transport: 'http',
      call: async () => rows,
      subscribe: () => () => undefined,
    } as unknown as BackendApi
    const el = await mountWith(AuditPanel, api)
    const row = el.querySelector('tbody tr')!
    expect(row.textContent).toContain('Issued license lic-1 for notes on the team tier')
    const details = row.querySelector('details')!
    expect(details.open).toBe(false)
    expect(details.querySelector('summary')?.textContent?.trim()).toBe('details')
    expect(details.textContent).toContain('"policy": "team"')
    // Outside the disclosure, nothing reads like JSON.
    const outside = row.cloneNode(true) as HTMLElement
    outside.querySelector('details')?.remove()
    expect(outside.textContent).not.toMatch(/[{}"]/)
    expect(el.querySelector('thead')?.textContent).not.toMatch(/policy/i)
  })
})
