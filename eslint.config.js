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
    // Type-aware rules where the product code lives: floating promises, unsafe any, misused
    // promises and the like are bugs the type checker can see.
    // src/ui/client/ is checked with its own tsconfig (DOM, no Node types): the project service
    // finds the nearest tsconfig.json for each file.
    files: ['src/**/*.ts', 'src/**/*.tsx', 'codegen/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
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
    },
  },
);
