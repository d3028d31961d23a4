import { reactive, watch, type WatchSource } from 'vue'

export type SortOrder = 'asc' | 'desc'

/**
 * Paging and sorting of a list the server pages (10,000 licenses never come to the browser at
 * once), and search as you type: a change to any filter waits `debounceMs` of quiet, goes back
 * to the first page and reloads.
 */
export function useServerList<S extends string>(opts: {
  sort: S
  order?: SortOrder
  pageSize?: number
  filters: WatchSource[]
  load: () => Promise<unknown>
  debounceMs?: number
}) {
  const page = reactive({
    offset: 0,
    limit: opts.pageSize ?? 50,
    sort: opts.sort,
    order: opts.order ?? ('desc' as SortOrder),
  })
  let timer: ReturnType<typeof setTimeout> | null = null
  watch(opts.filters, () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => {
      page.offset = 0
      void opts.load()
    }, opts.debounceMs ?? 250)
  })

  /** Sorts by `column`; a second click on the same column flips the direction. */
  function sortBy(column: S): void {
    if (page.sort === column) page.order = page.order === 'asc' ? 'desc' : 'asc'
    else {
      page.sort = column as typeof page.sort
      page.order = 'desc'
    }
    page.offset = 0
    void opts.load()
  }

  function goTo(offset: number): void {
    page.offset = Math.max(0, offset)
    void opts.load()
  }

  /** The sort part of a list call (what an export takes too). */
  const sortArgs = (): { sort: S; order: SortOrder } => ({ sort: page.sort as S, order: page.order })
  /** The sort and page part of a list call. */
  const pageArgs = (): { sort: S; order: SortOrder; limit: number; offset: number } => ({
    ...sortArgs(),
    limit: page.limit,
    offset: page.offset,
  })

  return { page, sortBy, goTo, sortArgs, pageArgs }
}

/** Saves a CSV export the server produced as a file the browser downloads. */
export function saveCsv(out: { filename: string; csv: string }): void {
  const url = URL.createObjectURL(new Blob([out.csv], { type: 'text/csv;charset=utf-8' }))
  const a = document.createElement('a')
  a.href = url
  a.download = out.filename
  document.body.appendChild(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 0)
}

/**
 * What a product picker (a dropdown, a name lookup) asks `licAdminProducts` for: names in order,
 * as many as the method allows in one page.
 */
export const PRODUCT_PICKER = { sort: 'name', order: 'asc', limit: 500 } as const
/** The same for webhook endpoints (the delivery log's filter), by URL. */
export const ENDPOINT_PICKER = { sort: 'url', order: 'asc', limit: 500 } as const
