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

// The domains of src-main and what each may import of the others, always through the other's
// module.ts or types.ts. The cluster domains stack nodes < models < services < {updates, gateway};
// licensing stands alone, and metrics reads the gateway's request log and the licensing database.
const DOMAINS = ['nodes', 'models', 'services', 'updates', 'gateway', 'licensing', 'metrics']
const DOMAIN_ORDER = {
  nodes: [],
  models: ['nodes'],
  services: ['nodes', 'models'],
  updates: ['nodes', 'models', 'services'],
  gateway: ['nodes', 'models', 'services'],
  licensing: [],
  metrics: ['gateway', 'licensing'],
}
/** The domains that touch the cluster (SSH, nodes, services); licensing and metrics do not. */
const CLUSTER_DOMAINS = ['nodes', 'models', 'services', 'updates', 'gateway']
const BASE = ['platform', 'contract', 'config', 'lib']
/** What a domain may take of http/: reading bodies, answering, the request's state. */
/** The product's own source, held to the size and complexity caps. */
const PRODUCT_SOURCES = [
  'src-main/**/*.ts',
  'src-preload/**/*.ts',
  'src-shared/**/*.ts',
  'src-renderer/**/*.ts',
  'src-renderer/**/*.vue',
]
const HTTP_KIT = ['body.ts', 'bodyDeadline.ts', 'respond.ts', 'requestState.ts', 'surfaces.ts']
const ENTRY_FILES = ['module.ts', 'types.ts']

const to = (types) => ({ to: { element: { types: { anyOf: types } } } })
const toEntry = (types, files) => ({ to: { element: { types: { anyOf: types }, fileInternalPath: files } } })

function layerPolicies() {
  const from = (type) => ({ element: { type } })
  const policies = [
    { from: from('lib'), allow: to(['lib']) },
    { from: from('config'), allow: to(['config', 'lib']) },
    { from: from('contract'), allow: to(['contract', 'config']) },
    { from: from('platform'), allow: to(BASE) },
    { from: from('cluster'), allow: to(['cluster', ...BASE]) },
  ]
  for (const d of DOMAINS) {
    const below = CLUSTER_DOMAINS.includes(d) ? ['cluster', ...BASE] : BASE
    policies.push({ from: from(d), allow: to([d, ...below]) })
    if (DOMAIN_ORDER[d].length > 0) policies.push({ from: from(d), allow: toEntry(DOMAIN_ORDER[d], ENTRY_FILES) })
    policies.push({ from: from(d), allow: toEntry(['http'], HTTP_KIT) })
  }
  // The kernel (Core, invoke, credentials, sessions) sits under the adapters and over the domains' base.
  policies.push({ from: from('kernel'), allow: to(['kernel', ...BASE]) })
  // Login, health and settings answer for the whole application: they see its credentials and the edge's names.
  policies.push({ from: from('system'), allow: to(['system', 'kernel', 'http', ...BASE]) })
  policies.push({ from: from('http'), allow: to(['http', 'kernel', ...BASE]) })
  policies.push({
    from: { element: { types: { anyOf: ['top', 'entry'] } } },
    allow: { to: { element: { type: '*' } } },
  })
  return policies
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
    // The order of the house (docs/design.md, Layout), top-down: entry points, the composition
    // root, the adapters (http/, the kernel in app/, system/), the domains in their own order, the
    // cluster layer, platform/, contract/ and config/, lib/. Each layer imports only those below it;
    // a domain reaches another only through its module.ts or types.ts, and uses only http/'s small
    // kit for its raw routes.
    files: ['src-main/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { node: { extensions: ['.ts', '.mts', '.js', '.json'] } },
      'boundaries/elements': [
        { type: 'lib', pattern: 'src-main/lib' },
        { type: 'config', pattern: 'src-main/config' },
        { type: 'contract', pattern: 'src-main/contract' },
        { type: 'platform', pattern: 'src-main/platform' },
        { type: 'cluster', pattern: 'src-main/(ssh|cluster)' },
        ...DOMAINS.map((d) => ({ type: d, pattern: `src-main/${d}` })),
        { type: 'system', pattern: 'src-main/system' },
        { type: 'kernel', pattern: 'src-main/app' },
        { type: 'http', pattern: 'src-main/http' },
        { type: 'entry', pattern: 'src-main/(desktop|cli)' },
        // Last: a file is the first element that matches it (single match below), so every folder
        // above claims its own files and src-main itself keeps only its top, compose.ts and the entry
        // points index.ts and headless.ts (an element is a folder, never a file).
        { type: 'top', pattern: 'src-main' },
      ],
      'boundaries/elements-single-match': true,
    },
    rules: { 'boundaries/dependencies': ['error', { default: 'disallow', policies: layerPolicies() }] },
  },
  {
    // A file a newcomer can hold in mind: past 500 lines it is two things (issue 40).
    files: PRODUCT_SOURCES,
    rules: { 'max-lines': ['warn', { max: 500 }] },
  },
  {
    // A newcomer reads any function on one screen.
    files: PRODUCT_SOURCES,
    rules: { 'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }] },
  },
  {
    // ...and follows its branches in one sitting.
    files: PRODUCT_SOURCES,
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
