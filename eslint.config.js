// @ts-check
// Type-aware lint (typescript-eslint's recommended type-checked rules) for the whole project:
// `npm run lint` (scripts/lint.sh) checks, `npm run format` fixes what can be fixed automatically.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores([
    'dist/',
    'data/',
    '.tmp/',
    // drizzle-kit's generated SQL and snapshots
    'core/db/migrations/',
    // the Helm chart: Go templates, YAML and the values schema, no JavaScript
    'charts/ffmpeg-operator/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        projectService: {
          // Files outside tsconfig.json's include, type-checked with default options.
          allowDefaultProject: ['*.js', 'drizzle.config.ts', 'e2e/bench/*.mjs'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise must be awaited, returned, .catch()ed, or marked fire-and-forget with `void`.
      // node:test's test() and describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          ignoreVoid: true,
          allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // `const { dropped: _, ...rest } = obj` is how the code copies an object without some keys.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Off: the code matches control characters on purpose, to refuse them in names, keys and paths.
      'no-control-regex': 'off',
      // Off: `async` without `await` is used on purpose for methods of Promise-returning interfaces
      // (a synchronous throw then becomes a rejection, as callers expect) and for async callbacks.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests read HTTP and Kubernetes JSON bodies as `any` and check them with assertions; typing
    // every response body would add casts, not safety. Production code keeps the `any` rules.
    files: ['**/*.test.ts', 'e2e/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
