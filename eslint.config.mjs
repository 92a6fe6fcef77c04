// Lint: typescript-eslint's recommended rules, plus the project's own: SSE framing and JSON
// parsing of stream data belong in the one reader/writer and the dialect codecs, not scattered.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', 'packages/proto/src/gen/**', '**/coverage/**', '.ci/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // Prettier wraps code at 120 columns but neither comments nor string literals: comments are held to it here
      // (a string stays whole so that it can be searched for).
      'max-len': [
        'error',
        {
          code: 120,
          comments: 120,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignoreUrls: true,
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[value=/^data: /]',
          message: "Frame SSE with sseFrame()/sseJson() from @iop/core, not a 'data: ' literal.",
        },
      ],
    },
  },
  {
    files: ['packages/core/src/sse.ts', 'apps/sim/**', '**/test/**', 'test/**', 'apps/bench/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        module: 'writable',
        require: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['apps/*/bin/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { __dirname: 'readonly', module: 'writable', require: 'readonly', process: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
