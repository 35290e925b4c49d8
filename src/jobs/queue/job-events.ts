// Job events of the whole queue (every process's workers) from now on: the completions and failures apply and the daemon wait for.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { QueueEvents, QueueEventsProducer, type QueueEventsListener } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUE_NAME } from './jobs.js';
import type { ErrorReporter } from './log.js';
import { closeRedis, connectWorker, RedisUnavailableError, type RedisSettings } from '../../store/redis.js';

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

/** The queue's events stream is trimmed to about this many events (BullMQ's default streams.events.maxLen, which converge keeps). */
const EVENTS_MAX_LEN = 10_000;

/** How often the marker is published while the reader has not seen one, and for how long at most. */
const MARKER_EVERY_MS = 50;
const MARKER_TIMEOUT_MS = 15_000;

/** A listener of converge's marker events (QueueEventsProducer's custom events). */
interface MarkerListener extends QueueEventsListener {
  [marker: `converge-reading-${string}`]: () => void;
}

/**
 * Publishes a custom event (BullMQ's QueueEventsProducer) until `events` reads one. QueueEvents starts reading at the
 * first blocking read it sends ('$'), which may come after its start resolves; once it has read the marker it reads on
 * from there, in stream order, so every event added after this resolves reaches it.
 */
async function untilReading(events: QueueEvents, producer: QueueEventsProducer): Promise<void> {
  const name = `converge-reading-${randomBytes(6).toString('hex')}` as const;
  let read = false;
  events.once<MarkerListener>(name, () => (read = true));
  const deadline = Date.now() + MARKER_TIMEOUT_MS;
  while (!read) {
    if (Date.now() > deadline)
      throw new RedisUnavailableError(`the queue's events were not readable within ${MARKER_TIMEOUT_MS / 1000}s`);
    await producer.publishEvent({ eventName: name }, EVENTS_MAX_LEN);
    await sleep(MARKER_EVERY_MS);
  }
}

/**
 * Follows the queue's events from now on, not its history, on a dedicated blocking connection, through BullMQ's public
 * API: resolves once the reader has read a marker published after it started (untilReading), so no event of a job
 * enqueued after this resolves is missed.
 */
export async function watchJobEvents(
  settings: RedisSettings,
  producer: Redis,
  handlers: JobEventHandlers,
  options: { name: string; onError: ErrorReporter },
): Promise<JobEventsFeed> {
  const connection = await connectWorker(settings, {
    name: options.name,
    onError: (e) => options.onError('events connection', e),
  });
  const events = new QueueEvents(QUEUE_NAME, {
    connection,
    prefix: settings.redisPrefix,
    blockingTimeout: BLOCKING_TIMEOUT_MS,
  });
  const markers = new QueueEventsProducer(QUEUE_NAME, { connection: producer, prefix: settings.redisPrefix });
  events.on('error', (error) => options.onError('queue events', error));
  events.on('completed', ({ jobId, returnvalue }) => handlers.completed(jobId, returnvalue));
  events.on('failed', ({ jobId, failedReason }) => handlers.failed(jobId, failedReason));
  try {
    await events.waitUntilReady();
    await untilReading(events, markers);
  } catch (error) {
    await events.close().catch(() => undefined);
    await closeRedis(connection);
    throw error;
  } finally {
    // Closes nothing shared: the producer connection belongs to the caller.
    await markers.close().catch(() => undefined);
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
