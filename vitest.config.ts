import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**', 'dist/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most suites wait on loopback I/O, timers and child processes: two files at a time on a 2-core machine.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
  },
});
