// Redis connections for BullMQ and the applied-state store: fail-fast producers, patient workers, one clear error.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConvergeError, UsageError } from '../core/errors.js';

/** The Redis part of converge's settings (src/cli/settings.ts Settings satisfies it). */
export interface RedisSettings {
  redisUrl: string;
  /** Prefix of every key; BullMQ's `prefix` option. Keep a {hash tag} so Redis Cluster keeps all keys on one slot. */
  redisPrefix: string;
  /** redis_cluster: redisUrl names one node of a Redis Cluster, whose other nodes are discovered from it. */
  redisCluster?: boolean | undefined;
}

/** How long a first connection may take before converge gives up with E_REDIS. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Redis could not be reached or refused converge's commands. One line, no stack, no password. */
export class RedisUnavailableError extends ConvergeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_REDIS', message, options);
  }
}

/** The URL with any password replaced, for messages and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '****';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable Redis URL)';
  }
}

/** Checks the prefix is usable as a BullMQ prefix and a key prefix: not empty, no ':' at the end, no spaces. */
export function checkPrefix(prefix: string): string {
  if (!prefix || /\s/.test(prefix) || prefix.endsWith(':')) {
    throw new UsageError(
      `redis_prefix "${prefix}" is not usable; give a word such as {converge} (no spaces, no trailing ':')`,
    );
  }
  return prefix;
}

/** Options of a connection: its client name (shown by CLIENT LIST) and the first-connect timeout. */
export interface ConnectOptions {
  name?: string;
  connectTimeoutMs?: number;
  /**
   * Producers only (default true): commands issued while an earlier batch is on the wire wait and go together
   * (ioredis enableAutoPipelining). Fewer socket writes, but each command waits for the end of the event-loop turn
   * and for the batch before it.
   */
  autoPipelining?: boolean;
  /** Told of every connection error after the first connect (ioredis reconnects meanwhile); see log.ts throttledErrors. */
  onError?: (error: Error) => void;
}

function baseOptions(settings: RedisSettings, options: ConnectOptions): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(settings.redisUrl);
  } catch {
    throw new UsageError(
      `redis_url "${redactRedisUrl(settings.redisUrl)}" is not a URL; give redis://host:port (or rediss:// for TLS)`,
    );
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new UsageError(`redis_url must start with redis:// or rediss://, not ${parsed.protocol}//`);
  }
  if (settings.redisCluster) checkClusterPrefix(settings.redisPrefix);
  return {
    connectTimeout: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    lazyConnect: true,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
  };
}

/**
 * A closed connection whose socket has not closed after this long is destroyed (ioredis disconnectTimeout, 2 s by
 * default): a frozen Redis never closes its side, and the timer would hold the process past the daemon's exit step.
 */
const DISCONNECT_TIMEOUT_MS = 300;

/**
 * On Redis Cluster every key of a prefix must hash to one slot (BullMQ's and converge's scripts touch several keys):
 * the prefix must begin with a non-empty {hash tag}, which Redis hashes instead of the whole key.
 */
export function checkClusterPrefix(prefix: string): void {
  if (!/^\{[^}]+\}/.test(prefix)) {
    throw new UsageError(
      `redis_prefix "${prefix}" has no hash tag at its start; with redis_cluster, give one such as {converge} so every key of converge and BullMQ lands on one slot`,
    );
  }
}

/**
 * A connection to one Redis, or with redis_cluster a Cluster client seeded from redis_url. The Cluster client has the
 * command interface of a Redis connection (ioredis' Commander: commands are routed by key slot, and every key under
 * the prefix shares its hash tag) and the same status, connect, quit and disconnect, so it is handed on as one.
 */
function newConnection(settings: RedisSettings, options: RedisOptions & { enableAutoPipelining?: boolean }): Redis {
  if (!settings.redisCluster) return new Redis(settings.redisUrl, options);
  const url = new URL(settings.redisUrl);
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, ...perNode } = options;
  const redisOptions: RedisOptions = {
    ...perNode,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: { servername: url.hostname } } : {}),
  };
  const clusterOptions: ClusterOptions = {
    redisOptions,
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(enableAutoPipelining !== undefined ? { enableAutoPipelining } : {}),
  };
  const cluster = new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], clusterOptions);
  return cluster as unknown as Redis;
}

/** Sets how a connection retries after it dropped (a Cluster client: how it rediscovers the cluster). */
function setRetry(redis: Redis, strategy: (times: number) => number | null): void {
  redis.options.retryStrategy = strategy;
  if (redis instanceof Cluster)
    (redis as unknown as { options: ClusterOptions }).options.clusterRetryStrategy = strategy;
}

/** Reconnect delays once a connection has worked: quick at first, at most 2 s apart. */
function reconnectDelay(times: number): number {
  return Math.min(100 * 2 ** Math.min(times, 5), 2_000);
}

/**
 * A producer connection (queue.add, applied state, job lookups): commands fail at once while Redis is away
 * (no offline queue, one retry per command) instead of piling up. Connected before it is returned; an
 * unreachable Redis gives RedisUnavailableError within CONNECT_TIMEOUT_MS.
 */
export async function connectProducer(settings: RedisSettings, options: ConnectOptions = {}): Promise<Redis> {
  const redis = newConnection(settings, {
    ...baseOptions(settings, options),
    connectionName: options.name ?? 'converge-producer',
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // Commands issued in the same tick share one socket write: a write is a system call, the larger part of a
    // command's cost here.
    enableAutoPipelining: options.autoPipelining !== false,
  });
  await connectOnce(redis, settings, options);
  return redis;
}

/**
 * A worker connection: maxRetriesPerRequest null as BullMQ requires for blocking commands, reconnecting
 * forever once it has connected. Checked with a bounded first connect, like producers.
 */
export async function connectWorker(settings: RedisSettings, options: ConnectOptions = {}): Promise<Redis> {
  const redis = newConnection(settings, {
    ...baseOptions(settings, options),
    connectionName: options.name ?? 'converge-worker',
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
  });
  await connectOnce(redis, settings, options);
  return redis;
}

/**
 * First connect with no retries (so a wrong URL fails once, quickly), then switch to reconnecting with backoff
 * so a Redis restart later is survived.
 */
async function connectOnce(redis: Redis, settings: RedisSettings, options: ConnectOptions): Promise<void> {
  const timeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  let lastError: (Error & { code?: string }) | undefined;
  const onError = (error: Error): void => {
    lastError = error;
  };
  redis.on('error', onError);
  setRetry(redis, () => null);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
          timeoutMs + 500,
        );
      }),
    ]);
    await redis.ping();
  } catch (error) {
    // A connection that already ended (refused) is left alone: ioredis' disconnect() would arm a 2 s timer on its
    // closed socket that nothing clears, holding the process open (every `converge plan` without Redis).
    if (redis.status !== 'end') redis.disconnect();
    throw unreachable(settings, lastError ?? (error as Error));
  } finally {
    clearTimeout(timer);
    redis.off('error', onError);
  }
  setRetry(redis, reconnectDelay);
  // A connection error after start-up is retried by ioredis; without a listener node would crash the process.
  const report = options.onError;
  redis.on('error', report ? (error: Error) => report(error) : () => undefined);
}

/**
 * Whether an error means Redis was away or not ready for a moment (connection closed or reconnecting, a command
 * refused while offline, the dataset still loading after a restart, a replica failing over): the same work may
 * succeed a little later, so it is retried, never failed for good.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof RedisUnavailableError || error.name === 'MaxRetriesPerRequestError') return true;
  return /^(Stream isn't writeable|Connection is closed)|^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN)\b/.test(
    error.message,
  );
}

/** The one-line error for a Redis that cannot be used. */
export function unreachable(settings: RedisSettings, error: Error & { code?: string }): RedisUnavailableError {
  const url = redactRedisUrl(settings.redisUrl);
  const code = error.code ?? codeFromMessage(error.message);
  if (code === 'NOAUTH' || code === 'WRONGPASS' || /NOAUTH|WRONGPASS|invalid password/i.test(error.message)) {
    return new RedisUnavailableError(
      `Redis at ${url} refused the credentials (${code ?? 'auth'}): set the password in REDIS_URL (redis://:PASSWORD@host:port)`,
      { cause: error },
    );
  }
  // ioredis' "Stream isn't writeable and enableOfflineQueue options is false" and "Connection is closed" mean this.
  const why =
    code ??
    (/^(Stream isn't writeable|Connection is closed)/.test(error.message)
      ? 'no connection'
      : error.message.split('\n')[0]);
  return new RedisUnavailableError(
    `Redis at ${url} is unreachable (${why}): start redis-server, or set --redis-url or REDIS_URL`,
    { cause: error },
  );
}

function codeFromMessage(message: string): string | undefined {
  return /\b(E[A-Z]{3,}|NOAUTH|WRONGPASS)\b/.exec(message)?.[1];
}

/** The keys under `prefix` (SCAN, the prefix's glob characters escaped), a page at a time; COUNT is a hint per page. */
export async function* scanPrefix(redis: Redis, prefix: string, count = 500): AsyncGenerator<string[]> {
  // A Cluster client sends SCAN to one node: every master is scanned (a prefix with a hash tag lives on one of them).
  if (redis instanceof Cluster) {
    for (const node of (redis as unknown as Cluster).nodes('master')) yield* scanPrefix(node, prefix, count);
    return;
  }
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', count);
    cursor = next;
    if (keys.length) yield keys;
  } while (cursor !== '0');
}

/** Closes connections without waiting on a Redis that is gone. */
export async function closeRedis(...connections: Array<Redis | undefined>): Promise<void> {
  await Promise.all(
    connections.map(async (redis) => {
      if (!redis || redis.status === 'end') return;
      if (redis.status !== 'ready') {
        redis.disconnect();
        return;
      }
      try {
        await redis.quit();
      } catch {
        redis.disconnect();
      }
    }),
  );
}
