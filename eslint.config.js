// ESLint (flat config) with typescript-eslint's type-aware rules: `npm run lint` (with knip for unused exports), run by .ci/run.
// docs/code-checks.md says what is checked and why each rule left out is left out.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The imports that would decide a resource a second time in a reconcile (docs/architecture.md, the corridor). */
const ONE_DECISION = {
  decide: {
    regex: '(^|/)core/decide\\.js$|^\\./decide\\.js$',
    importNames: ['decide'],
    message: 'decide() runs once per resource per reconcile, in the corridor (src/observe/corridor.ts)',
  },
  decideOutcomes: {
    regex: '(^|/)plan/outcomes\\.js$|^\\./outcomes\\.js$',
    importNames: ['decideOutcomes'],
    message: 'resources are decided in the corridor only (reconcileCorridor, src/observe/corridor.ts)',
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          ignoreRestSiblings: true,
        },
      ],
      // Off here, on for src below: tests read the JSON answers of the service and the emulator loosely on purpose.
      // `no-explicit-any` stays on.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // An async method without await is how a synchronous stub implements an async port (tests, in-memory stores).
      '@typescript-eslint/require-await': 'off',
      // A variable a closure reads before the one assignment (a worker its own processor refers to) cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // An abort signal's reason is whatever the aborter chose: passed on as it is.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      // What src reads (JSON.parse, Redis, HTTP answers, YAML) is parsed through zod or narrowed from `unknown`.
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-argument': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
      'max-lines': ['error', { max: 400 }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  // One decision per resource per reconcile: decide() is called by the corridor's decideOutcomes only, and that by the
  // corridor only (src/observe/corridor.ts); the daemon's act updates a decided outcome (withWriteInFlight).
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts', 'src/plan/outcomes.ts', 'src/observe/corridor.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [ONE_DECISION.decide, ONE_DECISION.decideOutcomes] }] },
  },
  {
    files: ['src/observe/corridor.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [ONE_DECISION.decide] }] },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      // expect(object.method) and vi.fn hand methods around unbound on purpose.
      '@typescript-eslint/unbound-method': 'off',
      // Tests read JSON answers of the service and the emulator loosely (src parses them through zod and has no any).
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
);
