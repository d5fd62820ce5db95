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
    // The children run the built CLI, as the package ships it: a child started from source pays
    // tsx's loader on each of the suite's ~40 starts (crash-safety alone restarts one 20 times).
    globalSetup: ['test/support/global-setup.ts', 'test/reliability/support/fresh-dist.ts'],
    env: { SWITCHBOARD_TEST_CHILD: 'dist' },
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time on a 2-core machine: each already runs one or two server processes,
    // and start-up times (tsx compiling, embedded initdb) grow quickly under more contention.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
