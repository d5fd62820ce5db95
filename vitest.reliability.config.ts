import { defineConfig } from 'vitest/config';

/**
 * The reliability suite (test/reliability/): real switchboard child processes killed, starved of
 * their database and Redis, shut down, run side by side. Kept out of the default `npm test` run
 * (see vitest.config.ts) because it takes minutes; run it with `npm run test:reliability`.
 */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    exclude: ['node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time on a 2-core machine: each already runs one or two server processes,
    // and start-up times (tsx compiling, embedded initdb) grow quickly under more contention.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
