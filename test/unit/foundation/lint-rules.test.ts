import { describe, expect, it } from 'vitest'
import { ESLint } from 'eslint'

// The probe files below are not on disk: the type-aware rules' project service takes them as
// default-project files, so the whole config (type-aware rules included) runs on them.
const eslint = new ESLint({
  cwd: process.cwd(),
  overrideConfig: {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['src-main/*/example.ts', 'src-renderer/*/example.ts', 'src-preload/example.ts'],
        },
      },
    },
  },
})
const electronImport = "import { app } from 'electron'\nexport const x = app\n"

async function ruleIds(filePath: string): Promise<string[]> {
  const [res] = await eslint.lintText(electronImport, { filePath })
  return (res?.messages ?? []).map((m) => m.ruleId ?? '')
}

describe('lint rules', () => {
  it('bans electron imports in headless code', async () => {
    expect(await ruleIds('src-main/nodes/example.ts')).toContain('no-restricted-imports')
    // The renderer's ban lives in typescript-eslint's variant, which also allows type-only contract imports.
    expect(await ruleIds('src-renderer/api/example.ts')).toContain('@typescript-eslint/no-restricted-imports')
  })

  it('allows them in the desktop shell and the preload', async () => {
    expect(await ruleIds('src-main/desktop/example.ts')).not.toContain('no-restricted-imports')
    expect(await ruleIds('src-preload/example.ts')).not.toContain('no-restricted-imports')
  })

  it('bans the global fetch and web streams in the daemon, not in the renderer', async () => {
    const ids = async (text: string, filePath: string): Promise<string[]> => {
      const [res] = await eslint.lintText(text, { filePath })
      return (res?.messages ?? []).map((m) => m.ruleId ?? '')
    }
    const call = "export const probe = (): Promise<unknown> => fetch('http://127.0.0.1:9/health')\n"
    const stream = 'export const s = new ReadableStream()\n'
    expect(await ids(call, 'src-main/nodes/example.ts')).toContain('no-restricted-globals')
    expect(await ids(stream, 'src-main/gateway/example.ts')).toContain('no-restricted-globals')
    expect(await ids(call, 'src-renderer/api/example.ts')).not.toContain('no-restricted-globals')
  })

  it('keeps the layers in order: the library knows no domain, a domain never reaches the application', async () => {
    const ids = async (text: string, filePath: string): Promise<string[]> => {
      const [res] = await eslint.lintText(text, { filePath })
      return (res?.messages ?? []).map((m) => m.ruleId ?? '')
    }
    const intoApp = "import { invokeMethod } from '../app/invoke'\nexport const x = invokeMethod\n"
    const intoDomain = "import { SshPool } from '../ssh/pool'\nexport const x = SshPool\n"
    const intoLib = "import { systemClock } from '../lib/clock'\nexport const x = systemClock\n"
    expect(await ids(intoApp, 'src-main/lib/example.ts')).toContain('boundaries/dependencies')
    expect(await ids(intoDomain, 'src-main/lib/example.ts')).toContain('boundaries/dependencies')
    expect(await ids(intoApp, 'src-main/nodes/example.ts')).toContain('boundaries/dependencies')
    expect(await ids(intoDomain, 'src-main/contract/example.ts')).toContain('boundaries/dependencies')
    expect(await ids(intoLib, 'src-main/nodes/example.ts')).not.toContain('boundaries/dependencies')
    expect(await ids(intoApp, 'src-main/http/example.ts')).not.toContain('boundaries/dependencies')
  })
})
