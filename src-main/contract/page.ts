/**
 * One page of an admin list (invoices, licenses, subscriptions, products, discounts, webhook
 * endpoints): the rows of the page and how many rows match the filter. Every list's answer is built
 * here, and the renderer pages them all with one composable over these types.
 *
 * Each list keeps the name its rows have always had on the wire (`items`, `licenses`, …) and the
 * order its two fields were documented in, so HTTP answers, clients and the OpenAPI documents stay
 * as they were: the sameness lives in the shape, the name is a parameter.
 */
import { z } from 'zod'

/** One page: `total` rows match, `K` holds this page of them. */
export type Page<K extends string, T> = { total: number } & { [P in K]: T[] }

/** The name a page's rows go under: the key of its one array. */
export type PageRowsKey<O> = { [K in keyof O]-?: O[K] extends readonly unknown[] ? K : never }[keyof O] & string

/** One row of a page whose rows are under `K`. */
export type PageRow<O, K extends keyof O> = O[K] extends readonly (infer R)[] ? R : never

/** What a list call asks for: `limit` rows from `offset` (at most `maxLimit`). */
export const pageOf = (defaultLimit: number, maxLimit: number) => ({
  limit: z.coerce.number().int().min(1).max(maxLimit).default(defaultLimit),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
})

type PageShape<K extends string, T extends z.ZodType> = { total: z.ZodNumber } & { [P in K]: z.ZodArray<T> }

/** The schema of a page of `row`s under `rowsKey`; `fieldOrder` is the order the documents list the fields in. */
export function page<K extends string, T extends z.ZodType>(
  rowsKey: K,
  row: T,
  fieldOrder: 'total-first' | 'rows-first' = 'total-first',
): z.ZodObject<PageShape<K, T>> {
  const rows = z.array(row)
  const shape =
    fieldOrder === 'total-first' ? { total: z.number(), [rowsKey]: rows } : { [rowsKey]: rows, total: z.number() }
  return z.object(shape as PageShape<K, T>)
}
