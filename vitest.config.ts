import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/reliability/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/listener-leaks.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at once on the 2-core CI machine: most of a file's time is spent waiting on
    // PostgreSQL, child processes and sockets, and one worker (the default there) left a core idle.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
