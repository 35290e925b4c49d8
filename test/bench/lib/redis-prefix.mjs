// The benchmarks' cleanup of Redis: every key of one bench prefix, through converge's own deleteKeys.
import { deleteKeys } from '../../../dist/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../../dist/store/redis.js';
import { REDIS_URL } from './common.mjs';

/** Deletes every key under `prefix` (a bench run's own, from benchPrefix). */
export async function dropBenchPrefix(prefix) {
  const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  try {
    await deleteKeys(redis, prefix);
  } finally {
    await closeRedis(redis);
  }
}
