import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { equals, matchAny, whereAll } from '../../../src-main/licensing/db'

/** One builder for every admin list's WHERE clause: input only ever reaches the bound arguments (issue 40, item 5). */
describe('whereAll', () => {
  it('joins the conditions present with AND and binds their values in order', () => {
    const w = whereAll([equals('status', 'active'), undefined, false, null, equals('kind', 'validate')])
    expect(w).toEqual({ where: 'WHERE status = ? AND kind = ?', args: ['active', 'validate'] })
    expect(whereAll([equals('status', undefined), false])).toEqual({ where: '', args: [] })
  })

  it('never splices a value into the SQL, so hostile text matches only itself', () => {
    const db = new Database(':memory:')
    db.exec('CREATE TABLE t (status TEXT, note TEXT)')
    const insert = db.prepare('INSERT INTO t VALUES (?, ?)')
    insert.run('active', 'x')
    insert.run("active' OR '1'='1", 'y')
    const hostile = "active' OR '1'='1"
    const w = whereAll([equals('status', hostile), matchAny(['note'], 'y')])
    expect(w.where).not.toContain(hostile)
    const rows = db.prepare(`SELECT note FROM t ${w.where}`).all(...w.args) as { note: string }[]
    expect(rows).toEqual([{ note: 'y' }])
    db.close()
  })
})
