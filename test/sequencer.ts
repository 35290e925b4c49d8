// The order of the run's files: vitest's own within a tier (longest first from its results cache, else largest first),
// the tiers as integration, e2e, unit: the integration files run while the e2e tier's build (test/global-build.ts)
// compiles, and the many short unit files last fill the second worker while the first ends its last file.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const TIER_ORDER: Record<string, number> = { integration: 0, e2e: 1, unit: 2 };

export class TiersSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const tier = (f: TestSpecification): number => TIER_ORDER[f.project.name] ?? 3;
    // Array.prototype.sort is stable: vitest's order holds within a tier.
    return sorted.sort((a, b) => tier(a) - tier(b));
  }
}
