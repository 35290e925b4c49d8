// The notification delivery queue: one BullMQ job per event and receiver (its job id is the delivery id, so a repeat
// on any replica is a no-op), retried with backoff; the worker sends through an injected function and never blocks reconciling.
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { deliveryJobId, NOTIFY_EVENT_TYPES, TEST_EVENT_TYPE, type Deliver, type DeliveryResult, type NotifyEvent } from '../core/notify/events.js';
import { SILENT_LOGGER, errorText, throttledErrors, type QueueLogger } from './log.js';
import { closeRedis, connectProducer, connectWorker, type RedisSettings } from '../store/redis.js';

const NOTIFY_QUEUE = 'converge-notify';

/** Attempts per delivery, and the first retry delay (doubling: 1 s, 2 s, 4 s, ... about a minute in all). */
const NOTIFY_ATTEMPTS = 6;
const NOTIFY_BACKOFF_MS = 1_000;
/** Deliveries done (or failed) are kept this long, so the same event enqueued again meanwhile is not sent twice. */
const KEEP_SECONDS = 7 * 24 * 3_600;
const KEEP_COUNT = 10_000;
/** Deliveries in flight at once: one receiver that hangs holds one slot until its timeout, not the others. */
const CONCURRENCY = 8;

const EventSchema = z.object({
  id: z.string().min(1),
  type: z.enum([...NOTIFY_EVENT_TYPES, TEST_EVENT_TYPE]),
  resource: z.object({ kind: z.string(), name: z.string() }),
  reason: z.string(),
  message: z.string(),
  revisionId: z.string().optional(),
  revisionStatus: z.string().optional(),
  deploymentId: z.string().optional(),
  manifestVersion: z.object({ kind: z.enum(['git', 'content']), id: z.string() }).nullable(),
  rollout: z.boolean().optional(),
  time: z.string(),
});

/** A delivery job's data: the receiver's name and the event. No URL, token or secret: the sender holds those. */
const DeliveryJobData = z.strictObject({ version: z.literal(1), receiver: z.string().min(1), event: EventSchema });

export interface NotifyQueueOptions {
  log?: QueueLogger;
  attempts?: number;
  backoffMs?: number;
}

/** Called once per attempt's end: the receiver's name, the event and the result (for the metric and the log). */
export type DeliveryListener = (receiver: string, event: Pick<NotifyEvent, 'id' | 'type'>, result: DeliveryResult, detail: string) => void;

export interface NotifyWorker {
  /**
   * Stops taking deliveries. Those in flight get `graceMs` to end; then each attempt is given up (counted retried) and
   * the delivery waits in the queue for the next attempt, by whichever replica leads then.
   */
  close(graceMs?: number): Promise<void>;
}

/** The answer of an attempt cut short by the worker's close. */
const STOPPED: Awaited<ReturnType<Deliver>> = { outcome: 'retry', detail: 'this replica stopped sending (stopping, or no longer the leader)' };

/** The delivery's answer, or STOPPED as soon as `signal` aborts (the request itself is ended by the sender's close). */
async function unlessStopped(delivery: Promise<Awaited<ReturnType<Deliver>>>, signal: AbortSignal): Promise<Awaited<ReturnType<Deliver>>> {
  if (signal.aborted) return STOPPED;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([delivery, new Promise<typeof STOPPED>((resolve) => signal.addEventListener('abort', (onAbort = () => resolve(STOPPED)), { once: true }))]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

export interface NotifyQueue {
  /** Adds one delivery per (event, receiver); one already added (on any replica) is left alone. Resolves once Redis took them. */
  enqueue(deliveries: ReadonlyArray<{ receiver: string; event: NotifyEvent }>): Promise<void>;
  /** Starts sending in this process (the daemon does while it leads). */
  startWorker(deliver: Deliver, onResult: DeliveryListener): Promise<NotifyWorker>;
  close(): Promise<void>;
}

/** What one attempt's answer does to the job: its result, and whether the attempt throws (retry) or ends it. */
function settle(job: Job, answer: Awaited<ReturnType<Deliver>>): { result: DeliveryResult; detail: string; error?: Error } {
  switch (answer.outcome) {
    case 'delivered':
      return { result: 'delivered', detail: `answered ${answer.status}` };
    case 'skipped':
      return { result: 'skipped', detail: answer.detail };
    case 'rejected':
      return { result: 'rejected', detail: answer.detail, error: new UnrecoverableError(answer.detail) };
    default: {
      const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      return { result: final ? 'failed' : 'retried', detail: answer.detail, error: new Error(answer.detail) };
    }
  }
}

/** One attempt of one delivery: send, report, and throw when BullMQ should retry it (or not: UnrecoverableError). */
async function runDelivery(job: Job, deliver: Deliver, onResult: DeliveryListener, stopped: AbortSignal): Promise<{ result: DeliveryResult; detail: string }> {
  const data = DeliveryJobData.safeParse(job.data);
  if (!data.success) throw new UnrecoverableError('a delivery job this version of converge cannot read');
  const { receiver, event } = data.data;
  let answer: Awaited<ReturnType<Deliver>>;
  try {
    answer = await unlessStopped(deliver(receiver, event), stopped);
  } catch (error) {
    answer = { outcome: 'retry', detail: errorText(error) };
  }
  const settled = settle(job, answer);
  onResult(receiver, event, settled.result, settled.detail);
  if (settled.error) throw settled.error;
  return { result: settled.result, detail: settled.detail };
}

/** Opens the delivery queue on the prefix (its own connections: a receiver's trouble never touches the jobs' ones). */
export async function openNotifyQueue(settings: RedisSettings, options: NotifyQueueOptions = {}): Promise<NotifyQueue> {
  const log = options.log ?? SILENT_LOGGER;
  const onError = throttledErrors(log);
  const attempts = options.attempts ?? NOTIFY_ATTEMPTS;
  const producer = await connectProducer(settings, { name: 'converge-notify', onError: (e) => onError('notify connection', e) });
  const queue = new Queue(NOTIFY_QUEUE, { connection: producer, prefix: settings.redisPrefix });
  queue.on('error', (error) => onError('notify queue', error));
  await queue.waitUntilReady().catch(async (error: unknown) => {
    await queue.close().catch(() => undefined);
    await closeRedis(producer);
    throw error;
  });
  const workers = new Set<NotifyWorker>();
  return {
    async enqueue(deliveries) {
      if (deliveries.length === 0) return;
      await queue.addBulk(
        deliveries.map(({ receiver, event }) => ({
          name: event.type,
          data: { version: 1, receiver, event } satisfies z.input<typeof DeliveryJobData>,
          opts: {
            jobId: deliveryJobId(event, receiver),
            attempts,
            backoff: { type: 'exponential', delay: options.backoffMs ?? NOTIFY_BACKOFF_MS },
            removeOnComplete: { age: KEEP_SECONDS, count: KEEP_COUNT },
            removeOnFail: { age: KEEP_SECONDS, count: KEEP_COUNT },
          },
        })),
      );
    },
    async startWorker(deliver, onResult) {
      const stopping = new AbortController();
      const connection: Redis = await connectWorker(settings, { name: 'converge-notify-worker', onError: (e) => onError('notify connection', e) });
      const worker = new Worker(NOTIFY_QUEUE, (job: Job) => runDelivery(job, deliver, onResult, stopping.signal), {
        connection,
        prefix: settings.redisPrefix,
        concurrency: CONCURRENCY,
      });
      worker.on('error', (error) => onError('notify worker', error));
      await worker.waitUntilReady();
      const handle: NotifyWorker = {
        async close(graceMs = 0) {
          workers.delete(handle);
          const timer = setTimeout(() => stopping.abort(), graceMs);
          await worker.close().catch((e: unknown) => onError('notify worker', e));
          clearTimeout(timer);
          await closeRedis(connection);
        },
      };
      workers.add(handle);
      return handle;
    },
    async close() {
      for (const worker of [...workers]) await worker.close();
      await queue.close().catch((e: unknown) => onError('notify queue', e));
      await closeRedis(producer);
    },
  };
}
