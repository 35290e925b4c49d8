// Setup file of the e2e tier: each file waits until the run's build for child processes (test/global-build.ts) is done.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUILT, FAILED } from '../global-build.js';

const dist = process.env.CONVERGE_TEST_DIST;
if (dist) {
  const base = dirname(dist);
  // A hang guard, not a target: tsc takes about 15 s on the quiet 2-core machine.
  for (const started = Date.now(); !existsSync(join(base, BUILT)); await sleep(100)) {
    if (existsSync(join(base, FAILED))) throw new Error(readFileSync(join(base, FAILED), 'utf8'));
    if (Date.now() - started > 300_000)
      throw new Error(`the build for child processes (test/global-build.ts) is not done after 5 minutes: ${base}`);
  }
}
