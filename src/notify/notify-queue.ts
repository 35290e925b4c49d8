// The notification delivery queues, one per receiver: one BullMQ job per event (its job id is the delivery id, so a repeat
// on any replica is a no-op), retried with backoff, each receiver with its own slots and bounded backlog; never blocks reconciling.
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { deliveryJobId, NOTIFY_EVENT_TYPES, TEST_EVENT_TYPE, type Deliver, type DeliveryResult, type NotifyEvent } from '../core/notify/events.js';
import { SILENT_LOGGER, errorText, throttledErrors, type QueueLogger } from '../jobs/queue/log.js';
import { closeRedis, connectProducer, connectWorker, type RedisSettings } from '../store/redis.js';

const NOTIFY_QUEUE = 'converge-notify';

/** Attempts per delivery, and the first retry delay (doubling: 1 s, 2 s, 4 s, ... about a minute in all). */
const NOTIFY_ATTEMPTS = 6;
const NOTIFY_BACKOFF_MS = 1_000;
/** Deliveries done (or failed) are kept this long, so the same event enqueued again meanwhile is not sent twice. */
const KEEP_SECONDS = 7 * 24 * 3_600;
const KEEP_COUNT = 10_000;

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

/** One receiver's own limits: deliveries in flight to it at once, and deliveries waiting for it at most. */
export interface ReceiverLimits {
  name: string;
  inFlight: number;
  backlog: number;
}

export interface NotifyQueueOptions {
  log?: QueueLogger;
  attempts?: number;
  backoffMs?: number;
}

/** Called once per attempt's end: the receiver's name, the event and the result (for the metric and the log). */
export type DeliveryListener = (receiver: string, event: Pick<NotifyEvent, 'id' | 'type'>, result: DeliveryResult, detail: string) => void;

/** A delivery dropped from a receiver's full backlog (the oldest go first): never sent. */
export interface DroppedDelivery {
  receiver: string;
  event: Pick<NotifyEvent, 'id' | 'type'>;
}

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
  /**
   * Adds one delivery per (event, receiver) to that receiver's queue; one already added (on any replica) is left alone.
   * Then each receiver's backlog is cut to its limit, the oldest first. Resolves once Redis took them, with what was dropped.
   */
  enqueue(deliveries: ReadonlyArray<{ receiver: string; event: NotifyEvent }>): Promise<DroppedDelivery[]>;
  /** Starts sending in this process (the daemon does while it leads): each receiver with its own worker and slots. */
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

/** The states a delivery waits in for its receiver (queued, or between retries): those a full backlog drops. */
const WAITING = ['wait', 'delayed', 'prioritized', 'paused'] as const;
/** Every unfinished state: the backlog counts the deliveries in flight too. */
const UNFINISHED = [...WAITING, 'active'] as const;

/** One receiver's queue, and its adds (one at a time: the room for each is made from the count after the last). */
interface ReceiverQueue {
  limits: ReceiverLimits;
  queue: Queue;
  adding: Promise<unknown>;
}

/** The queue of one receiver: `converge-notify-<name>` under the prefix (names are letters, digits, '.', '_', '-'). */
function queueName(receiver: string): string {
  return `${NOTIFY_QUEUE}-${receiver}`;
}

async function countOf(queue: Queue, states: readonly (typeof UNFINISHED)[number][]): Promise<number> {
  const counts = await queue.getJobCounts(...states);
  return states.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
}

function droppedOf(receiver: string, event: Pick<NotifyEvent, 'id' | 'type'>): DroppedDelivery {
  return { receiver, event: { id: event.id, type: event.type } };
}

/**
 * Removes the `count` oldest waiting deliveries (by when they were queued). One that a worker took meanwhile cannot be
 * removed and is not dropped: it is being sent.
 */
async function dropOldest(target: ReceiverQueue, count: number): Promise<DroppedDelivery[]> {
  // The oldest `count` of each state, of which the oldest `count` overall go.
  const jobs = await target.queue.getJobs([...WAITING], 0, count - 1, true);
  const oldest = jobs.filter((job) => job?.id).sort((a, b) => a.timestamp - b.timestamp).slice(0, count);
  const dropped: DroppedDelivery[] = [];
  for (const job of oldest) {
    if (!(await job.remove().then(() => true, () => false))) continue;
    const data = DeliveryJobData.safeParse(job.data);
    dropped.push(droppedOf(target.limits.name, data.success ? data.data.event : { id: job.id!, type: 'test' }));
  }
  return dropped;
}

/**
 * Adds one receiver's deliveries within its backlog: the unfinished ones (waiting, between retries, in flight) and the
 * new ones together stay at most `backlog`; room is made by dropping the oldest waiting, then the oldest new ones.
 */
async function addWithin(target: ReceiverQueue, events: readonly NotifyEvent[], attempts: number, backoffMs: number): Promise<DroppedDelivery[]> {
  const { name, backlog } = target.limits;
  const excess = (await countOf(target.queue, UNFINISHED)) + events.length - backlog;
  const dropped = excess > 0 ? await dropOldest(target, excess) : [];
  const over = Math.max(0, excess - dropped.length);
  for (const event of events.slice(0, over)) dropped.push(droppedOf(name, event));
  await target.queue.addBulk(
    events.slice(over).map((event) => ({
      name: event.type,
      data: { version: 1, receiver: name, event } satisfies z.input<typeof DeliveryJobData>,
      opts: {
        jobId: deliveryJobId(event, name),
        attempts,
        backoff: { type: 'exponential', delay: backoffMs },
        removeOnComplete: { age: KEEP_SECONDS, count: KEEP_COUNT },
        removeOnFail: { age: KEEP_SECONDS, count: KEEP_COUNT },
      },
    })),
  );
  return dropped;
}

/** One worker per receiver, `inFlight` deliveries at once each, on one shared connection (BullMQ blocks on its own). */
async function startWorkers(settings: RedisSettings, receivers: readonly ReceiverQueue[], deliver: Deliver, onResult: DeliveryListener, onError: (source: string, error: unknown) => void): Promise<NotifyWorker> {
  const stopping = new AbortController();
  const connection: Redis = await connectWorker(settings, { name: 'converge-notify-worker', onError: (e) => onError('notify connection', e) });
  const workers = receivers.map(({ limits }) => {
    const worker = new Worker(queueName(limits.name), (job: Job) => runDelivery(job, deliver, onResult, stopping.signal), {
      connection,
      prefix: settings.redisPrefix,
      concurrency: limits.inFlight,
    });
    worker.on('error', (error) => onError('notify worker', error));
    return worker;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady())).catch(async (error: unknown) => {
    await Promise.all(workers.map((w) => w.close(true).catch(() => undefined)));
    await closeRedis(connection);
    throw error;
  });
  return {
    async close(graceMs = 0) {
      const timer = setTimeout(() => stopping.abort(), graceMs);
      await Promise.all(workers.map((w) => w.close().catch((e: unknown) => onError('notify worker', e))));
      clearTimeout(timer);
      await closeRedis(connection);
    },
  };
}

/**
 * Opens the delivery queues on the prefix, one per receiver (their own connections: a receiver's trouble never touches
 * the jobs' ones, and each receiver's slots and backlog are its own).
 */
export async function openNotifyQueue(settings: RedisSettings, receivers: readonly ReceiverLimits[], options: NotifyQueueOptions = {}): Promise<NotifyQueue> {
  const log = options.log ?? SILENT_LOGGER;
  const onError = throttledErrors(log);
  const attempts = options.attempts ?? NOTIFY_ATTEMPTS;
  const backoffMs = options.backoffMs ?? NOTIFY_BACKOFF_MS;
  const producer = await connectProducer(settings, { name: 'converge-notify', onError: (e) => onError('notify connection', e) });
  const queues = new Map<string, ReceiverQueue>();
  for (const limits of receivers) {
    const queue = new Queue(queueName(limits.name), { connection: producer, prefix: settings.redisPrefix });
    queue.on('error', (error) => onError('notify queue', error));
    queues.set(limits.name, { limits, queue, adding: Promise.resolve() });
  }
  const closeQueues = async (): Promise<void> => {
    for (const { queue } of queues.values()) await queue.close().catch((e: unknown) => onError('notify queue', e));
    await closeRedis(producer);
  };
  await Promise.all([...queues.values()].map(({ queue }) => queue.waitUntilReady())).catch(async (error: unknown) => {
    await closeQueues();
    throw error;
  });
  const workers = new Set<NotifyWorker>();
  return {
    async enqueue(deliveries) {
      const byReceiver = new Map<ReceiverQueue, NotifyEvent[]>();
      for (const { receiver, event } of deliveries) {
        const target = queues.get(receiver);
        if (target) byReceiver.set(target, [...(byReceiver.get(target) ?? []), event]);
      }
      const dropped = await Promise.all(
        [...byReceiver].map(([target, events]) => {
          const added = target.adding.then(() => addWithin(target, events, attempts, backoffMs));
          target.adding = added.catch(() => undefined);
          return added;
        }),
      );
      return dropped.flat();
    },
    async startWorker(deliver, onResult) {
      const started = await startWorkers(settings, [...queues.values()], deliver, onResult, onError);
      const handle: NotifyWorker = {
        async close(graceMs) {
          workers.delete(handle);
          await started.close(graceMs);
        },
      };
      workers.add(handle);
      return handle;
    },
    async close() {
      for (const worker of [...workers]) await worker.close();
      await closeQueues();
    },
  };
}
