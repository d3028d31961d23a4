import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { likeContains } from '../../../src-main/licensing/db'

describe('likeContains', () => {
  it('matches the text anywhere and takes %, _ and backslashes literally', () => {
    const db = new Database(':memory:')
    db.exec('CREATE TABLE t (v TEXT)')
    const insert = db.prepare('INSERT INTO t VALUES (?)')
    for (const v of ['ada@example.com', 'a%b', 'axb', 'a_b', 'a\\b', 'zzz']) insert.run(v)
    const find = (q: string): string[] =>
      (db.prepare("SELECT v FROM t WHERE v LIKE ? ESCAPE '\\' ORDER BY v").all(likeContains(q)) as { v: string }[]).map(
        (r) => r.v,
      )
    expect(find('example')).toEqual(['ada@example.com'])
    expect(find('a%b')).toEqual(['a%b'])
    expect(find('a_b')).toEqual(['a_b'])
    expect(find('a\\b')).toEqual(['a\\b'])
    expect(find('%')).toEqual(['a%b'])
    db.close()
  })
})
