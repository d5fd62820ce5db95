import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'generated/**', 'dist/**', '.switchboard/**', 'test-results/**', 'src/ui/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/ui/client/**'],
    rules: { 'no-console': 'error' },
  },
);
