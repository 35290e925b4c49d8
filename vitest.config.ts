// Tests in three tiers (vitest projects), chosen by where a test file lives, so a new file needs no config edit:
//   unit         src/**/*.test.ts      beside the code, pure: no Redis, no sockets, no child processes, no real waits
//   integration  test/**/*.test.ts     Redis, HTTP on loopback, files, worker threads (everything not under test/e2e)
//   e2e          test/e2e/**/*.test.ts child processes: the built CLI, worker processes, the daemon as a process
// `npm run test:unit` needs nothing running; the Redis check and the run's key prefix are set up for integration and
// e2e, the build for child processes for e2e only.
import { defineConfig } from 'vitest/config';
import { TiersSequencer } from './test/sequencer.js';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most suites wait on loopback I/O, timers and child processes (the e2e tier uses about 0.6 of a core per file):
    // three files at a time on a 2-core machine (one pool for every project, so `npm test` runs three files at a time
    // in all). The whole suite's times are in docs/development.md.
    maxWorkers: 3,
    // Integration files first, then e2e, then unit (test/sequencer.ts): the e2e tier's build runs beside the first.
    sequence: { sequencer: TiersSequencer },
    projects: [
      // Unit and integration files share their worker's module cache (isolate: false): loading src/ and its
      // dependencies afresh for every file was about half of these tiers' time. So a test file must leave no global
      // state behind (no vi.mock, process.env edits or handlers it does not undo; metrics live on their own Registry).
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'], isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          isolate: false,
          exclude: ['test/e2e/**', 'test/bench/**'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // The e2e files share their worker's module cache too: a fresh one per file cost about 1.4 s of CPU each
          // (vitest's runner, the helpers and the emulator loaded again), a tenth of the tier's CPU. The same rule holds:
          // a file leaves no global state behind.
          isolate: false,
          globalSetup: ['test/global-setup.ts', 'test/global-build.ts'],
          // The build for child processes runs in the background; each file waits for it first.
          setupFiles: ['test/e2e/build-ready.ts'],
          // Concurrent tests of a file (daemons, `converge plan` children) three at a time: more starve each other on 2 cores.
          maxConcurrency: 3,
        },
      },
    ],
  },
});
