/**
 * Who a request or call is: a named consumer key, the legacy shared key, the admin, or nobody on
 * an open surface. The edge (http/) sets it and the gateway admits by it, so it lives below both.
 */
export type ConsumerIdentity =
  | {
      readonly kind: 'key'
      readonly id: string
      readonly name: string
      readonly models: readonly string[] | null
      /** Sold with a license (issue 45): a stranger's key, held to a smaller share of shared room. */
      readonly licensed: boolean
    }
  | { readonly kind: 'legacy' }
  | { readonly kind: 'admin' }
  | { readonly kind: 'open' }
