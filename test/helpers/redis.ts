// Redis for the tests: a private key prefix per test, removal of every key under it, ports that refuse, hang or count connections.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { scanPrefix } from '../../src/store/redis.js';

export const REDIS_URL = process.env.CONVERGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** This run's prefix (global setup, whose teardown removes leftovers) plus a unique suffix: keeps the {hash tag}. */
export function testPrefix(label: string): string {
  const base = process.env.CONVERGE_TEST_PREFIX ?? '{cvt-local}';
  return `${base}-${label}-${randomBytes(3).toString('hex')}`;
}

export function rawRedis(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
}

/** Every key under the prefix. */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const keys of scanPrefix(redis, prefix, 1000)) out.push(...keys);
  return out;
}

/** Removes every key under `prefix` (on the Redis at `url`); a Redis child that is already gone took its keys with it. */
export async function dropPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    const keys = await keysUnder(redis, prefix);
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  } catch {
    // Nothing to remove: the Redis is gone.
  } finally {
    redis.disconnect();
  }
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A loopback TCP server that accepts connections and never answers (a hung Redis). */
export async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A loopback TCP server that counts the connections it accepts and closes each at once (a Redis that drops every
 * client): how many attempts a client made, whatever the machine's speed.
 */
export async function closingServer(): Promise<{ port: number; accepted(): number; close(): Promise<void> }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    accepted: () => accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The commands clients sent that name a key under `prefix` (Redis' MONITOR; those a script runs are left out), taken
 * in batches: `take(redis)` answers what arrived since the last take, once every command `redis` sent before it is seen.
 */
export async function monitorPrefix(
  prefix: string,
  url = REDIS_URL,
): Promise<{ take(redis: Redis): Promise<string[][]>; stop(): void }> {
  const monitor = await new Redis(url, { maxRetriesPerRequest: 1 }).monitor();
  const seen: string[][] = [];
  const marks = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' || !args.some((arg) => arg.startsWith(prefix))) return;
    const mark = args[0]?.toLowerCase() === 'exists' ? marks.get(args[1] ?? '') : undefined;
    if (mark) mark();
    else seen.push(args);
  });
  let n = 0;
  return {
    async take(redis) {
      const mark = `${prefix}:monitor-mark-${n++}`;
      const arrived = new Promise<void>((resolve) => marks.set(mark, resolve));
      await redis.exists(mark);
      await arrived;
      marks.delete(mark);
      return seen.splice(0);
    },
    stop: () => monitor.disconnect(),
  };
}
