import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'generated/**', 'dist/**', '.switchboard/**', 'test-results/**', 'src/ui/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware rules wherever TypeScript lives: floating promises, unsafe any, misused promises
    // and the like are bugs the type checker can see, in a test or a bench as much as in src/.
    // src/ui/client/ and test/ui/ are checked with their own tsconfigs (docs/architecture.md,
    // "Three type-checked projects"): the project service finds the nearest tsconfig.json.
    files: ['src/**/*.ts', 'src/**/*.tsx', 'codegen/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'catalog/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  {
    // The catalog's proof cases (catalog/<preset>/<preset>.case.ts) are test code.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'catalog/**/*.ts'],
    rules: {
      // A fake stands in for an async interface (a resolver, a store, a sender) and often needs no
      // await; its `async` is what makes its throw a rejection, as the real one's would be.
      '@typescript-eslint/require-await': 'off',
      // vitest's asymmetric matchers (expect.any, expect.stringMatching, expect.objectContaining)
      // are typed any; inside an expectation they are assertions, not values that travel on.
      // Reading an any is still caught (no-unsafe-member-access, -call, -return, -argument).
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/ui/client/**'],
    rules: {
      'no-console': 'error',
      // One error registry, one serialiser per transport: no envelope is written out by hand.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "Property[key.name='error'] > ObjectExpression > Property[key.name='code'][value.value=/^[a-z_]+$/]",
          message:
            'Throw (or sendError) a registered AppError from src/errors/app-error.ts; errorEnvelope builds the envelope.',
        },
      ],
      // One logger: the type and the factory come from src/log/logger.ts, which alone knows it is pino.
      'no-restricted-imports': [
        'error',
        {
          paths: ['pino', 'pino-pretty'].map((name) => ({
            name,
            message: 'Import Logger (and createLogger) from src/log/logger.ts, the one place that knows the logger.',
          })),
        },
      ],
    },
  },
  {
    files: ['src/log/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
);
