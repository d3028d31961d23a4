import { ref, shallowRef, type Ref, type WatchSource } from 'vue'
import type { MethodName } from '../../../src-main/contract'
import type { PageRow, PageRowsKey } from '../../../src-main/contract/page'
import { useApi, type InputOf, type OutputOf } from '../../api'
import { useAction } from './useAction'
import { useServerList, type SortOrder } from './useServerList'

/** The contract's methods that answer one page of a list (`page()` in the contract). */
export type PagedMethod = { [M in MethodName]: OutputOf<M> extends { total: number } ? M : never }[MethodName]

/** What a list sends besides its page and sort: its own filter. */
type FilterOf<M extends PagedMethod> = Omit<InputOf<M>, 'limit' | 'offset' | 'sort' | 'order'>

/**
 * One admin list the server pages: its filter, its load, its pager and sort, and the rows of the
 * page shown. Every paged admin panel (invoices, licenses, subscriptions, products, discounts,
 * webhook endpoints) is this plus its own columns; `rows` names where the contract's page keeps them.
 */
export function usePagedList<
  M extends PagedMethod,
  K extends PageRowsKey<OutputOf<M>>,
  S extends string = Extract<InputOf<M> extends { sort?: infer V } ? V : never, string>,
>(opts: {
  method: M
  rows: K
  sort: NoInfer<S>
  order?: SortOrder
  pageSize?: number
  filter: () => FilterOf<M>
  /** What a change to re-runs the search from the first page (after a short quiet). */
  filters: WatchSource[]
  /** Each loaded page's rows (a panel keeps its selection fresh from them). */
  loaded?: (rows: PageRow<OutputOf<M>, K>[]) => void
}) {
  type Row = PageRow<OutputOf<M>, K>
  const api = useApi()
  const list = useAction()
  const rows: Ref<Row[]> = shallowRef([])
  const total = ref(0)
  const server = useServerList<S>({
    sort: opts.sort,
    order: opts.order,
    pageSize: opts.pageSize,
    filters: opts.filters,
    load: () => load(),
  })

  async function load(): Promise<void> {
    // The filter and page fields are the method's own input; the sort key is one of its enum.
    const input = { ...opts.filter(), ...server.pageArgs() } as unknown as InputOf<M>
    const out = await list.run(() => api.call(opts.method, input))
    if (!out) return
    const page = out as unknown as Record<K, Row[]> & { total: number }
    rows.value = page[opts.rows]
    total.value = page.total
    opts.loaded?.(rows.value)
  }

  return { ...server, list, rows, total, load }
}

export type PagedList<Row, S extends string = string> = {
  readonly list: ReturnType<typeof useAction>
  readonly rows: Ref<Row[]>
  readonly total: Ref<number>
} & Pick<ReturnType<typeof useServerList<S>>, 'page' | 'sortBy' | 'goTo'>
