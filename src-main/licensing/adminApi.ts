/** Handlers of the licensing admin API (contract `licensingAdminContract`, `/v1/admin/*`, admin credential checked by http/surfaces). */
import type { Handlers } from '../contract/define'
import { ApiError } from '../contract/errors'
import type { RateView, licensingAdminContract } from '../contract/licensing'
import { licensesCsv } from './exports'
import type { LicensingServices } from './licensingServices'

export function adminHandlers(s: LicensingServices): Handlers<typeof licensingAdminContract> {
  const { catalog, licenses, discounts } = s
  return {
    licAdminProducts: async (q) => catalog.products(q),
    licAdminProduct: async ({ id }) => catalog.getProduct(id),
    licAdminCreateProduct: async (input) => catalog.createProduct(input),
    licAdminUpdateProduct: async ({ id, ...patch }) => catalog.updateProduct(id, patch),
    licAdminProductPriceEffect: async ({ id, ...change }) => catalog.previewProductChange(id, change),
    licAdminDeleteProduct: async ({ id }) => {
      catalog.deleteProduct(id)
      return { ok: true }
    },
    licAdminPolicies: async ({ product_id }) => catalog.listPolicies(product_id),
    licAdminCreatePolicy: async ({ product_id, ...input }) => catalog.createPolicy(product_id, input),
    licAdminUpdatePolicy: async ({ id, ...patch }) => {
      const view = catalog.updatePolicy(id, patch)
      // The licenses' gateway keys take the tier's new access at their next request.
      if (patch.access !== undefined) licenses.access.followPolicy(id)
      return view
    },
    licAdminDeletePolicy: async ({ id }) => {
      catalog.deletePolicy(id)
      return { ok: true }
    },
    licAdminLicenses: async (q) => licenses.lookup.search(q),
    licAdminExportLicenses: async (q) => licensesCsv((max) => licenses.lookup.matching(q, max), s.deps.clock.now()),
    licAdminLicense: async ({ id }) => ({ ...licenses.lookup.detail(id), access: licenses.quotas.quota(id) }),
    licAdminTopUp: async ({ id, tokens }) => {
      if (!licenses.lookup.row(id)) throw new ApiError('not_found', `no license ${id}`)
      return licenses.quotas.addTopUp({ licenseId: id, tokens, source: 'admin' })
    },
    licAdminAccess: async (q) => licenses.report.report(q),
    licAdminIssueLicense: async (a) =>
      licenses.issuing.issueComplimentary({
        productId: a.product_id,
        policyId: a.policy_id,
        buyerEmail: a.buyer_email,
        buyerNote: a.buyer_note,
      }),
    licAdminRevokeLicense: async ({ id, reason }) => licenses.status.revoke(id, reason),
    licAdminSuspendLicense: async ({ id, reason }) => licenses.status.suspend(id, reason),
    licAdminReinstateLicense: async ({ id }) => licenses.status.reinstate(id),
    licAdminLicenseKey: async ({ id }) => {
      const row = licenses.lookup.row(id)
      if (!row) throw new ApiError('not_found', `no license ${id}`)
      if (row.status === 'revoked') throw new ApiError('conflict', 'the license is revoked')
      return { license_key: licenses.issuing.freshKey(row) }
    },
    licAdminMachines: async (q) => licenses.lookup.machines(q),
    licAdminDeactivateMachine: async ({ id, reason }) => licenses.machines.deactivateMachine(id, reason),
    licAdminDiscounts: async (q) => discounts.page(q),
    licAdminCreateDiscount: async (input) => discounts.create(input),
    licAdminUpdateDiscount: async ({ id, ...patch }) => discounts.update(id, patch),
    licAdminDeleteDiscount: async ({ id }) => {
      discounts.remove(id)
      return { ok: true }
    },
    licAdminQuote: async ({ product, policy, code }) =>
      s.pricing.quote({ productSlug: product, policy, code, includeHidden: true }),
    licAdminRates: async ({ refresh }) => {
      const rates: RateView[] = []
      const errors: string[] = []
      for (const currency of ['USD', 'EUR'] as const) {
        try {
          const r = refresh ? await s.rates.rate(currency) : s.rates.cached(currency)
          if (r) rates.push({ currency, centibps: r.centibps, source: r.source, fetched_at: r.fetchedAt })
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err))
        }
      }
      return { rates, errors, sources: s.rates.sources() }
    },
    licAdminAudit: async (q) => s.audit.list(q),
    licAdminAnalytics: async ({ days }) => s.analytics.report(days),
    licAdminIssuerKey: async () => ({ public_key_pem: s.issuer.publicKeyPem }),
    licAdminImportIssuerKey: async ({ private_key_pem }) => {
      try {
        s.issuer.importPrivateKeyPem(private_key_pem, s.deps.clock.now())
      } catch (err) {
        throw new ApiError('bad_input', err instanceof Error ? err.message : 'not an Ed25519 private key')
      }
      s.audit.record({ actor: 'admin', action: 'issuer_key.import', targetType: 'issuer_key', details: {} })
      s.deps.logger.warn(
        'licensing issuer key replaced by an admin import; keys signed by the previous key no longer verify',
      )
      return { public_key_pem: s.issuer.publicKeyPem }
    },
  }
}
