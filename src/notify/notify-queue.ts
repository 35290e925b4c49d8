// The notification delivery queues, one per receiver: one BullMQ job per event (its job id is the delivery id, so a repeat
// on any replica is a no-op), retried with backoff, each receiver with its own slots and bounded backlog; never blocks reconciling.
import { z } from 'zod';
import {
  deliveryJobId,
  NOTIFY_EVENT_TYPES,
  TEST_EVENT_TYPE,
  type Deliver,
  type DeliveryResult,
  type NotifyEvent,
} from '../core/notify/events.js';
import {
  openBoundedQueues,
  noRetry,
  type AddOptions,
  type Attempt,
  type DroppedJob,
} from '../jobs/queue/bounded-queues.js';
import { SILENT_LOGGER, errorText, throttledErrors, type QueueLogger } from '../jobs/queue/log.js';
import type { RedisSettings } from '../store/redis.js';
import { groupBy } from '../core/group-by.js';

/** Each receiver's queue is `converge-notify-<name>` under the prefix (src/jobs/queue/bounded-queues.ts). */
const NOTIFY_LABEL = 'notify';

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
  manifestVersion: z
    .object({ kind: z.enum(['git', 'content']), id: z.string(), uncommitted: z.literal(true).optional() })
    .nullable(),
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
export type DeliveryListener = (
  receiver: string,
  event: Pick<NotifyEvent, 'id' | 'type'>,
  result: DeliveryResult,
  detail: string,
) => void;

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
const STOPPED: Awaited<ReturnType<Deliver>> = {
  outcome: 'retry',
  detail: 'this replica stopped sending (stopping, or no longer the leader)',
};

/** The delivery's answer, or STOPPED as soon as `signal` aborts (the request itself is ended by the sender's close). */
async function unlessStopped(
  delivery: Promise<Awaited<ReturnType<Deliver>>>,
  signal: AbortSignal,
): Promise<Awaited<ReturnType<Deliver>>> {
  if (signal.aborted) return STOPPED;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      delivery,
      new Promise<typeof STOPPED>((resolve) =>
        signal.addEventListener('abort', (onAbort = () => resolve(STOPPED)), { once: true }),
      ),
    ]);
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

/** What one attempt's answer does to the delivery: its result, and whether the attempt throws (retry) or ends it. */
function settle(
  last: boolean,
  answer: Awaited<ReturnType<Deliver>>,
): { result: DeliveryResult; detail: string; error?: Error } {
  switch (answer.outcome) {
    case 'delivered':
      return { result: 'delivered', detail: `answered ${answer.status}` };
    case 'skipped':
      return { result: 'skipped', detail: answer.detail };
    case 'rejected':
      return { result: 'rejected', detail: answer.detail, error: noRetry(answer.detail) };
    default:
      return { result: last ? 'failed' : 'retried', detail: answer.detail, error: new Error(answer.detail) };
  }
}

/** One attempt of one delivery: send, report, and throw when it should be retried (or not: noRetry). */
async function runDelivery(
  attempt: Attempt,
  deliver: Deliver,
  onResult: DeliveryListener,
  stopped: AbortSignal,
): Promise<{ result: DeliveryResult; detail: string }> {
  const data = DeliveryJobData.safeParse(attempt.data);
  if (!data.success) throw noRetry('a delivery job this version of converge cannot read');
  const { receiver, event } = data.data;
  let answer: Awaited<ReturnType<Deliver>>;
  try {
    answer = await unlessStopped(deliver(receiver, event), stopped);
  } catch (error) {
    answer = { outcome: 'retry', detail: errorText(error) };
  }
  const settled = settle(attempt.last, answer);
  onResult(receiver, event, settled.result, settled.detail);
  if (settled.error) throw settled.error;
  return { result: settled.result, detail: settled.detail };
}

/** A dropped delivery job as the receiver's name and its event: one of `added`, or read from the job (an unreadable one by its job id). */
function droppedOf(receiver: string, job: DroppedJob, added: ReadonlyMap<string, NotifyEvent>): DroppedDelivery {
  const data = DeliveryJobData.safeParse(job.data);
  const event = added.get(job.id) ?? (data.success ? data.data.event : { id: job.id, type: 'test' as const });
  return { receiver, event: { id: event.id, type: event.type } };
}

/**
 * Opens the delivery queues on the prefix, one per receiver (their own connections: a receiver's trouble never touches
 * the jobs' ones, and each receiver's slots and backlog are its own).
 */
export async function openNotifyQueue(
  settings: RedisSettings,
  receivers: readonly ReceiverLimits[],
  options: NotifyQueueOptions = {},
): Promise<NotifyQueue> {
  const log = options.log ?? SILENT_LOGGER;
  const add: AddOptions = {
    attempts: options.attempts ?? NOTIFY_ATTEMPTS,
    backoffMs: options.backoffMs ?? NOTIFY_BACKOFF_MS,
    keepSeconds: KEEP_SECONDS,
    keepCount: KEEP_COUNT,
  };
  const queues = await openBoundedQueues(settings, NOTIFY_LABEL, receivers, throttledErrors(log));
  return {
    async enqueue(deliveries) {
      const byReceiver = groupBy(deliveries, (delivery) => delivery.receiver);
      const dropped = await Promise.all(
        [...byReceiver].map(async ([receiver, delivered]) => {
          const events = delivered.map((delivery) => delivery.event);
          const added = new Map(events.map((event) => [deliveryJobId(event, receiver), event]));
          const jobs = events.map((event) => ({
            id: deliveryJobId(event, receiver),
            name: event.type,
            data: { version: 1, receiver, event } satisfies z.input<typeof DeliveryJobData>,
          }));
          return (await queues.add(receiver, jobs, add)).map((job) => droppedOf(receiver, job, added));
        }),
      );
      return dropped.flat();
    },
    startWorker(deliver, onResult) {
      return queues.startWorkers((_receiver, attempt, stopped) => runDelivery(attempt, deliver, onResult, stopped));
    },
    close: () => queues.close(),
  };
}
