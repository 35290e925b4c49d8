// Job events of the whole queue (every process's workers) from now on: the completions and failures apply and the daemon wait for.
import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUE_NAME } from './jobs.js';
import type { ErrorReporter } from './log.js';
import { closeRedis, connectWorker, type RedisSettings } from './redis.js';

export interface JobEventHandlers {
  /** A job finished on some worker; `value` is its result as the worker returned it (not checked yet). */
  completed(jobId: string, value: unknown): void;
  /** A job failed for good (no attempt left, or a failure not worth another). */
  failed(jobId: string, reason: string): void;
}

export interface JobEventsFeed {
  close(): Promise<void>;
  /** Drops its connection at once (a stop whose close did not end in time). */
  disconnect(): void;
}

/** How long one blocking read of the event stream lasts before it is sent again (bounds the time close() takes). */
const BLOCKING_TIMEOUT_MS = 2_000;

/**
 * Follows the queue's events from now on, not its history, on a dedicated blocking connection. "Now" is the Redis
 * server's clock (TIME): QueueEvents takes a Redis stream id to start after, and Redis makes its stream ids from
 * its own clock in ms, so no event of a job enqueued after this resolves is missed, whoever's clock is off.
 */
export async function watchJobEvents(
  settings: RedisSettings,
  producer: Redis,
  handlers: JobEventHandlers,
  options: { name: string; onError: ErrorReporter },
): Promise<JobEventsFeed> {
  const [seconds, micros] = await producer.time();
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const connection = await connectWorker(settings, { name: options.name, onError: (e) => options.onError('events connection', e) });
  const events = new QueueEvents(QUEUE_NAME, { connection, prefix: settings.redisPrefix, lastEventId: `${nowMs - 1}-0`, blockingTimeout: BLOCKING_TIMEOUT_MS });
  events.on('error', (error) => options.onError('queue events', error));
  events.on('completed', ({ jobId, returnvalue }) => handlers.completed(jobId, returnvalue));
  events.on('failed', ({ jobId, failedReason }) => handlers.failed(jobId, failedReason));
  try {
    await events.waitUntilReady();
  } catch (error) {
    await events.close().catch(() => undefined);
    await closeRedis(connection);
    throw error;
  }
  return {
    async close() {
      await events.close().catch((e: unknown) => options.onError('queue events', e));
      await closeRedis(connection);
    },
    disconnect() {
      void events.close().catch(() => undefined);
      connection.disconnect();
    },
  };
}
