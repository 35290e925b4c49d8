// The order of the run's files: the tiers as integration, e2e, unit; the e2e files longest first by their recorded times.
// The integration files run while the e2e tier's build (test/global-build.ts) compiles, and the many short unit files
// last fill the other workers while one ends its last e2e file.
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const TIER_ORDER: Record<string, number> = { integration: 0, e2e: 1, unit: 2 };

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Seconds each e2e file took in a whole run (test/e2e-durations.json, written by scripts/test-durations.mjs). A clean
 * clone has no results cache of vitest, whose order would then be by file size: the benchmarks' smoke test, short
 * and slow, came last and ran alone for a minute.
 */
const E2E_SECONDS = JSON.parse(readFileSync(resolve(ROOT, 'test', 'e2e-durations.json'), 'utf8')) as Record<
  string,
  number
>;

/** The weight of an e2e file not recorded yet (a new one): among the longer ones, so it does not end the run alone. */
const UNRECORDED_SECONDS = 30;

function recordedSeconds(file: TestSpecification): number {
  return E2E_SECONDS[relative(ROOT, file.moduleId)] ?? UNRECORDED_SECONDS;
}

export class TiersSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const tier = (f: TestSpecification): number => TIER_ORDER[f.project.name] ?? 3;
    // Array.prototype.sort is stable: vitest's order holds within the integration and unit tiers.
    return sorted.sort((a, b) => {
      const byTier = tier(a) - tier(b);
      if (byTier !== 0 || a.project.name !== 'e2e') return byTier;
      return recordedSeconds(b) - recordedSeconds(a);
    });
  }
}
