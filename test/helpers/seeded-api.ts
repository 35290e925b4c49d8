// One deployment `api` on an emulator, with a Redis prefix and the applied-state store over it: the set-up of the tests
// of a former leader's job settled or folded by the worker that drops it (test/sync, test/jobs).
import type { Redis } from 'ioredis';
import type { LiveDeployment } from '../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { createProcessor, type ProcessorContext } from '../../src/jobs/runner/processor.js';
import { leaseKey } from '../../src/leader/lease.js';
import { ServiceClient } from '../../src/service/client.js';
import { AppliedStateStore } from '../../src/store/applied-state.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { dropPrefix, rawRedis, testPrefix } from './redis.js';

/** What a test works with: the emulator, Redis and its prefix, the applied state, a client, and `api` as listed. */
export interface SeededApi {
  emulator: RunningEmulator;
  redis: Redis;
  prefix: string;
  store: AppliedStateStore;
  client: ServiceClient;
  live: LiveDeployment;
}

/** Starts it; each part's cleanup is pushed onto `cleanups` (run in reverse by the test's afterEach). */
export async function seededApi(label: string, cleanups: Array<() => Promise<unknown>>): Promise<SeededApi> {
  const emulator = await startEmulator({
    buildMs: 0,
    seed: {
      deployments: [
        {
          name: 'api',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/api:1' },
        },
      ],
    },
  });
  const redis: Redis = rawRedis();
  const prefix = testPrefix(label);
  cleanups.push(
    () => emulator.close(),
    async () => redis.disconnect(),
    () => dropPrefix(prefix),
  );
  const store = new AppliedStateStore(redis, prefix);
  const client = new ServiceClient({ baseUrl: emulator.url });
  const live = emulator.store.allDeployments()[0] as unknown as LiveDeployment;
  return { emulator, redis, prefix, store, client, live };
}

/** A logger that says nothing (the processor's tests read what it returns and folds, not its lines). */
const QUIET = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * A job processor over the seeded api (its client and applied state), folding where it runs as `by` with folds of its
 * own (no cache shared: a new leader's worker, or one of two); `options` adds to it (a clock, a stale-job check).
 */
export function seededProcessor(
  api: SeededApi,
  by: string,
  options: Partial<ProcessorContext> = {},
): ReturnType<typeof createProcessor> {
  return createProcessor({
    client: api.client,
    store: api.store,
    env: {},
    log: QUIET,
    rateLimit: async () => undefined,
    record: { folds: new ResourceFolds(api.redis, api.prefix, leaseKey(api.prefix)), by },
    ...options,
  });
}
