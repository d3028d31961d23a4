import { describe, expect, it, vi } from 'vitest'
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
          // One probe file per layer and domain: more than the project service takes by default.
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 32,
        },
      },
    },
  },
})
// What the plugins print while they load the config (eslint-plugin-boundaries warns of deprecated settings there).
const printed: string[] = []
const warn = console.warn.bind(console)
vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
  printed.push(args.map(String).join(' '))
  warn(...args)
})
const electronImport = "import { app } from 'electron'\nexport const x = app\n"

async function ruleIds(filePath: string): Promise<string[]> {
  const [res] = await eslint.lintText(electronImport, { filePath })
  return (res?.messages ?? []).map((m) => m.ruleId ?? '')
}

// The first lintText builds the type-aware program for the whole project: tens of seconds on a
// loaded 2-core machine, which is not what these tests measure.
describe('lint rules', { timeout: 180_000 }, () => {
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

  it('loads the config without a deprecation notice', async () => {
    await ruleIds('src-main/nodes/example.ts')
    expect(printed.filter((line) => /deprecated/i.test(line))).toEqual([])
  })

  describe('the order of the house (issue 40)', () => {
    const ids = async (text: string, filePath: string): Promise<string[]> => {
      const [res] = await eslint.lintText(text, { filePath })
      return (res?.messages ?? []).map((m) => m.ruleId ?? m.message)
    }
    const imports = (name: string, from: string): string =>
      `import { ${name} } from '${from}'\nexport const x = ${name}\n`
    const RULE = 'boundaries/dependencies'

    it('refuses an arrow running back up the domain order, and allows the one running down', async () => {
      expect(await ids(imports('createModelsModule', '../models/module'), 'src-main/nodes/example.ts')).toContain(RULE)
      expect(await ids(imports('createServicesModule', '../services/module'), 'src-main/models/example.ts')).toContain(
        RULE,
      )
      expect(await ids(imports('createGatewayModule', '../gateway/module'), 'src-main/services/example.ts')).toContain(
        RULE,
      )
      expect(await ids(imports('createUpdatesModule', '../updates/module'), 'src-main/gateway/example.ts')).toContain(
        RULE,
      )
      expect(await ids(imports('createNodesModule', '../nodes/module'), 'src-main/models/example.ts')).not.toContain(
        RULE,
      )
      expect(await ids(imports('createModelsModule', '../models/module'), 'src-main/gateway/example.ts')).not.toContain(
        RULE,
      )
    })

    it('reaches another domain only through its module.ts or types.ts', async () => {
      expect(await ids(imports('HardwareService', '../nodes/hardware'), 'src-main/services/example.ts')).toContain(RULE)
      expect(await ids(imports('ModelCatalog', '../models/catalog'), 'src-main/updates/example.ts')).toContain(RULE)
      expect(await ids(imports('parseSize', '../models/progress'), 'src-main/services/example.ts')).toContain(RULE)
      expect(await ids(imports('parseSize', '../models/types'), 'src-main/services/example.ts')).not.toContain(RULE)
      // Inside its own folder a domain imports any file.
      expect(await ids(imports('httpHealth', './healthCheck'), 'src-main/services/example.ts')).not.toContain(RULE)
      // The status of the services is the services domain's: the nodes below it cannot reach it.
      expect(await ids(imports('StatusService', '../services/status'), 'src-main/nodes/example.ts')).toContain(RULE)
    })

    it('keeps licensing and metrics off the cluster', async () => {
      expect(await ids(imports('SshPool', '../ssh/pool'), 'src-main/licensing/example.ts')).toContain(RULE)
      expect(await ids(imports('createNodesModule', '../nodes/module'), 'src-main/licensing/example.ts')).toContain(
        RULE,
      )
      expect(await ids(imports('createNodesModule', '../nodes/module'), 'src-main/metrics/example.ts')).toContain(RULE)
      expect(
        await ids(imports('ServiceDirectory', '../cluster/serviceDirectory'), 'src-main/metrics/example.ts'),
      ).toContain(RULE)
      expect(await ids(imports('SshPool', '../ssh/pool'), 'src-main/nodes/example.ts')).not.toContain(RULE)
    })

    it("lets a domain use only http/'s small kit", async () => {
      expect(await ids(imports('createServer', '../http/server'), 'src-main/gateway/example.ts')).toContain(RULE)
      expect(await ids(imports('readCookie', '../http/session'), 'src-main/licensing/example.ts')).toContain(RULE)
      expect(await ids(imports('sendJson', '../http/respond'), 'src-main/gateway/example.ts')).not.toContain(RULE)
      expect(await ids(imports('readBody', '../http/body'), 'src-main/licensing/example.ts')).not.toContain(RULE)
    })

    it('puts the composition root on top: nothing below imports it, and the kernel knows no domain', async () => {
      expect(await ids(imports('createCore', '../compose'), 'src-main/http/example.ts')).toContain(RULE)
      expect(await ids(imports('createCore', '../compose'), 'src-main/gateway/example.ts')).toContain(RULE)
      expect(
        await ids(imports('ConsumerKeys', '../gateway/keys/consumerKeyStore'), 'src-main/app/example.ts'),
      ).toContain(RULE)
      expect(await ids(imports('UsageMeter', '../gateway/relay/usageMeter'), 'src-main/http/example.ts')).toContain(
        RULE,
      )
      expect(await ids(imports('startDaemon', '../headless'), 'src-main/gateway/example.ts')).toContain(RULE)
      expect(await ids(imports('startDaemon', '../headless'), 'src-main/lib/example.ts')).toContain(RULE)
      expect(await ids(imports('invokeMethod', '../app/invoke'), 'src-main/http/example.ts')).not.toContain(RULE)
      expect(await ids(imports('createCore', '../compose'), 'src-main/desktop/example.ts')).not.toContain(RULE)
    })

    it('keeps platform/ and lib/ under the domains: jobs, caller identity and the SQLite opener know none', async () => {
      expect(
        await ids(imports('ServiceDirectory', '../cluster/serviceDirectory'), 'src-main/platform/example.ts'),
      ).toContain(RULE)
      expect(await ids(imports('openLicensingDb', '../licensing/db'), 'src-main/lib/example.ts')).toContain(RULE)
      expect(await ids(imports('openSqlite', '../lib/sqlite'), 'src-main/gateway/example.ts')).not.toContain(RULE)
      expect(await ids(imports('JobRegistry', '../platform/jobs'), 'src-main/models/example.ts')).not.toContain(RULE)
    })

    it('warns at 500 lines per file', async () => {
      const long = (n: number): string =>
        Array.from({ length: n }, (_, i) => `export const v${i} = ${i}`).join('\n') + '\n'
      const [over] = await eslint.lintText(long(501), { filePath: 'src-main/nodes/example.ts' })
      const [at] = await eslint.lintText(long(500), { filePath: 'src-main/nodes/example.ts' })
      expect(over?.messages.find((m) => m.ruleId === 'max-lines')?.severity).toBe(1)
      expect(at?.messages.map((m) => m.ruleId)).not.toContain('max-lines')
    })
  })
})
