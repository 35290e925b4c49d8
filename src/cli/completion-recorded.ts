// What shell completion offers after `converge history`: the resources the line's Redis prefix knows.
import { parseArgs } from 'node:util';
import { EventLogStore } from '../store/event-log.js';
import { closeRedis, connectProducer } from '../store/redis.js';
import { resolveSettings } from './settings.js';

/** How long completion waits for Redis: a Tab press must not hang on a Redis that does not answer. */
const CONNECT_TIMEOUT_MS = 1_500;

/**
 * The names `converge history` takes on the prefix that the line being typed names (`words`: the words after
 * `history`, whose --redis-url, --redis-prefix and --config are read, else their environment and config defaults):
 * each resource's name, or Kind/NAME where two kinds have one name. Throws on any problem (the caller offers nothing).
 */
export async function recordedWords(words: readonly string[], env: NodeJS.ProcessEnv): Promise<string[]> {
  const { values } = parseArgs({
    args: [...words],
    options: { config: { type: 'string' }, 'redis-url': { type: 'string' }, 'redis-prefix': { type: 'string' } },
    strict: false,
    allowPositionals: true,
  });
  const settings = await resolveSettings({ positionals: [], values }, env);
  const redis = await connectProducer(settings, { name: 'converge-completion', connectTimeoutMs: CONNECT_TIMEOUT_MS });
  let keys: string[];
  try {
    keys = await new EventLogStore(redis, settings.redisPrefix).keysWithState();
  } finally {
    await closeRedis(redis);
  }
  const kindsOf = new Map<string, number>();
  const names = keys.map((key) => key.slice(key.indexOf('/') + 1));
  for (const name of names) kindsOf.set(name, (kindsOf.get(name) ?? 0) + 1);
  return [...new Set(keys.map((key, i) => ((kindsOf.get(names[i]!) ?? 0) > 1 ? key : names[i]!)))].sort();
}
