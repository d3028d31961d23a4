import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import vue from 'eslint-plugin-vue'
import prettier from 'eslint-config-prettier'
import boundaries from 'eslint-plugin-boundaries'

const electronBan = {
  'no-restricted-imports': [
    'error',
    {
      paths: [
        {
          name: 'electron',
          message:
            'electron may only be imported in src-main/desktop/ and src-preload/ (headless mode must run under plain Node).',
        },
      ],
    },
  ],
}

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'out/**',
      'dist/**',
      'test-results/**',
      'playwright-report/**',
      '.tandem-data/**',
      'overlays/**',
      'javascript/**',
      '.electron-native/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...vue.configs['flat/recommended'],
  {
    files: ['**/*.vue'],
    languageOptions: { parserOptions: { parser: tseslint.parser } },
  },
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', __dirname: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'vue/multi-word-component-names': 'off',
      ...electronBan,
    },
  },
  {
    // TypeScript already checks names; the core rule does not know DOM or Node globals.
    files: ['**/*.ts', '**/*.mts', '**/*.vue'],
    rules: { 'no-undef': 'off' },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {
      globals: {
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
      },
    },
  },
  {
    // The sim's command shims end each case with process.exit(), which the rule cannot see.
    files: ['test/sim/shims/**'],
    rules: { 'no-fallthrough': 'off' },
  },
  {
    files: ['src-main/desktop/**', 'src-preload/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // Rules that need types: a promise nobody handles fails silently, and a switch over a union says
    // what becomes of a member added later. `void p` stays the explicit mark of a promise that
    // handles its own failure (each such site catches inside). Not yet on .vue files: the type service makes them take
    // minutes there (issue 30).
    files: ['src-main/**/*.ts', 'src-shared/**/*.ts', 'src-renderer/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    // The direction of imports in src-main (docs/design.md, Layout): the library layer knows no
    // domain, the contract knows only settings, a domain never reaches up into the application.
    files: ['src-main/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { node: { extensions: ['.ts', '.mts', '.js', '.json'] } },
      'boundaries/elements': [
        { type: 'lib', pattern: 'src-main/lib' },
        { type: 'config', pattern: 'src-main/config' },
        { type: 'contract', pattern: 'src-main/contract' },
        { type: 'platform', pattern: 'src-main/(platform|jobs)' },
        { type: 'system', pattern: 'src-main/system' },
        {
          type: 'domain',
          pattern: 'src-main/(ssh|nodes|models|services|gateway|licensing|metrics|updates)',
        },
        { type: 'http', pattern: 'src-main/http' },
        { type: 'app', pattern: 'src-main/app' },
        { type: 'entry', pattern: 'src-main/(desktop|cli)' },
      ],
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          policies: [
            { from: { element: { type: 'lib' } }, allow: { to: { element: { type: 'lib' } } } },
            {
              from: { element: { type: 'config' } },
              allow: { to: { element: { types: { anyOf: ['config', 'lib'] } } } },
            },
            {
              from: { element: { type: 'contract' } },
              allow: { to: { element: { types: { anyOf: ['contract', 'config'] } } } },
            },
            {
              from: { element: { type: 'platform' } },
              allow: { to: { element: { types: { anyOf: ['platform', 'contract', 'config', 'lib'] } } } },
            },
            {
              // Domains use http/'s helpers for their raw routes (bodies, answers, request state).
              from: { element: { type: 'domain' } },
              allow: {
                to: { element: { types: { anyOf: ['domain', 'platform', 'contract', 'config', 'lib', 'http'] } } },
              },
            },
            {
              // Login, health and settings answer for the whole application, so they see its credentials.
              from: { element: { type: 'system' } },
              allow: {
                to: {
                  element: {
                    types: { anyOf: ['system', 'app', 'domain', 'platform', 'contract', 'config', 'lib', 'http'] },
                  },
                },
              },
            },
            {
              from: { element: { types: { anyOf: ['http', 'app'] } } },
              allow: {
                to: {
                  element: {
                    types: { anyOf: ['http', 'app', 'system', 'domain', 'platform', 'contract', 'config', 'lib'] },
                  },
                },
              },
            },
            { from: { element: { type: 'entry' } }, allow: { to: { element: { type: '*' } } } },
          ],
        },
      ],
    },
  },
  {
    // A newcomer reads any function on one screen.
    files: [
      'src-main/**/*.ts',
      'src-preload/**/*.ts',
      'src-shared/**/*.ts',
      'src-renderer/**/*.ts',
      'src-renderer/**/*.vue',
    ],
    rules: { 'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }] },
  },
  {
    // ...and follows its branches in one sitting.
    files: [
      'src-main/**/*.ts',
      'src-preload/**/*.ts',
      'src-shared/**/*.ts',
      'src-renderer/**/*.ts',
      'src-renderer/**/*.vue',
    ],
    rules: { complexity: ['error', 15] },
  },
  {
    files: ['src-main/**/*.ts'],
    rules: {
      // fetch's byte streams detach ArrayBuffers, which slows every typed-array read in the process for good.
      'no-restricted-globals': [
        'error',
        { name: 'fetch', message: 'call out with httpClient (src-main/lib/httpClient.ts), not fetch' },
        { name: 'Response', message: 'answers come from httpClient (src-main/lib/httpClient.ts)' },
        { name: 'ReadableStream', message: 'web byte streams detach ArrayBuffers; use node:stream' },
      ],
    },
  },
  {
    // The renderer takes only types from main, and those from the contract: what it needs at run
    // time comes as data from the build (scripts/contractData.ts) or from src-shared/, so the
    // dashboard ships no zod.
    files: ['src-renderer/**'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: electronBan['no-restricted-imports'][1].paths,
          patterns: [
            {
              group: ['**/src-main/**', '!**/src-main/contract', '!**/src-main/contract/**'],
              message: 'the renderer imports from src-main/contract/ only',
            },
            {
              group: ['**/src-main/contract', '**/src-main/contract/**'],
              allowTypeImports: true,
              message: 'types only: run-time data comes from virtual:contract-data (scripts/contractData.ts)',
            },
          ],
        },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false },
      ],
    },
  },
  {
    // Code both processes run as it is: no dependencies, no zod, nothing from either side.
    files: ['src-shared/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!\\./)', message: 'src-shared/ imports only its own files' }] },
      ],
    },
  },
  prettier,
)
