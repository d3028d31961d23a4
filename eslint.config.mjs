import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import vue from 'eslint-plugin-vue'
import prettier from 'eslint-config-prettier'

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
    // A newcomer reads any main-process function on one screen.
    files: ['src-main/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }],
      // fetch's byte streams detach ArrayBuffers, which slows every typed-array read in the process for good.
      'no-restricted-globals': [
        'error',
        { name: 'fetch', message: 'call out with httpClient (src-main/core/httpClient.ts), not fetch' },
        { name: 'Response', message: 'answers come from httpClient (src-main/core/httpClient.ts)' },
        { name: 'ReadableStream', message: 'web byte streams detach ArrayBuffers; use node:stream' },
      ],
    },
  },
  {
    // The renderer shares only the contract with main: schemas, types and pure helpers.
    files: ['src-renderer/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: electronBan['no-restricted-imports'][1].paths,
          patterns: [
            {
              group: ['**/src-main/**', '!**/src-main/contract', '!**/src-main/contract/**'],
              message: 'the renderer imports from src-main/contract/ only',
            },
          ],
        },
      ],
    },
  },
  prettier,
)
