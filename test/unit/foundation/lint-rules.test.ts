import { describe, expect, it } from 'vitest'
import { ESLint } from 'eslint'

const eslint = new ESLint({ cwd: process.cwd() })
const electronImport = "import { app } from 'electron'\nexport const x = app\n"

async function ruleIds(filePath: string): Promise<string[]> {
  const [res] = await eslint.lintText(electronImport, { filePath })
  return (res?.messages ?? []).map((m) => m.ruleId ?? '')
}

describe('lint rules', () => {
  it('bans electron imports in headless code', async () => {
    expect(await ruleIds('src-main/nodes/example.ts')).toContain('no-restricted-imports')
    expect(await ruleIds('src-renderer/api/example.ts')).toContain('no-restricted-imports')
  })

  it('allows them in the desktop shell and the preload', async () => {
    expect(await ruleIds('src-main/desktop/example.ts')).not.toContain('no-restricted-imports')
    expect(await ruleIds('src-preload/example.ts')).not.toContain('no-restricted-imports')
  })
})
