import { describe, expect, it } from 'vitest'
import { helpBeyondLabel, sectionMustOpen, sectionStartsOpen } from '../../../src-renderer/views/settingsSections'

describe('Settings sections', () => {
  const calm = { invalid: false, unsaved: false }

  it('start open on a wide screen only when short, and collapsed on a phone', () => {
    expect(sectionStartsOpen({ fields: 3, wide: true, ...calm })).toBe(true)
    expect(sectionStartsOpen({ fields: 12, wide: true, ...calm })).toBe(false)
    expect(sectionStartsOpen({ fields: 2, wide: false, ...calm })).toBe(false)
  })

  it('open themselves when a field is invalid or unsaved, at any width and length', () => {
    expect(sectionStartsOpen({ fields: 12, wide: false, invalid: true, unsaved: false })).toBe(true)
    expect(sectionStartsOpen({ fields: 12, wide: false, invalid: false, unsaved: true })).toBe(true)
    expect(sectionMustOpen({ invalid: true, unsaved: false })).toBe(true)
    expect(sectionMustOpen(calm)).toBe(false)
  })

  it('drop a help line that only restates the label', () => {
    expect(helpBeyondLabel('node1 SSH user', 'node1 SSH user')).toBeNull()
    expect(helpBeyondLabel('asr port', 'asr HTTP port')).toBeNull()
    expect(helpBeyondLabel('node1 host', 'node1 (llm) host')).toBeNull()
    expect(helpBeyondLabel('Hold (seconds)', 'How long a request waits for a swap')).toBe(
      'How long a request waits for a swap',
    )
  })
})
