// The daemon's notifier: while this replica leads, it reads the prefix's event log from the cursor kept in Redis, queues each entry's events to the receivers that want them, then moves the cursor (never awaited by reconciling).
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { DeliveryResult, NotifyEvent } from '../core/notify/events.js';
import { appliedStateLostEvent, notifyEventsOf, type EntryContext, type LogEntry } from '../core/notify/log-events.js';
import { receiverWants, type ReceiverConfig } from '../core/notify/receivers.js';
import type { RecordedEvent } from '../core/resource-record.js';
import type { EventLogStore } from '../store/event-log.js';

/** Entries read (and their deliveries queued) at once. */
const BATCH = 200;
/** How often the log is read for new entries when the last read found none. */
const POLL_MS = 200;
/** After Redis failed (a read, an enqueue, the cursor), the same entries are tried again this much later. */
const RETRY_MS = 1_000;
/** A receiver whose backlog keeps overflowing is warned about at most this often (with the count dropped since). */
const DROP_WARN_MS = 60_000;
/**
 * Entries older than this are not read, wherever the kept cursor stands (a daemon that ran without receivers for a
 * while): the delivery queues remember an id for 7 days (src/notify/notify-queue.ts), so an older entry could not be
 * told from one already sent.
 */
const RESUME_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** A term that ends waits this long at most for the batch in progress (its deliveries are queued or read again). */
const STOP_GRACE_MS = 2_000;

/** What the notifier reads of the event log: its entries after a position, the position, and the projection's context. */
export type NotifyLog = Pick<EventLogStore, 'after' | 'notifyCursor' | 'statesOf'>;

type Delivery = { receiver: string; event: NotifyEvent };

export interface NotifierOptions {
  /** The receivers as configured: names and filters, never a URL or a secret. */
  receivers: readonly ReceiverConfig[];
  /** Adds deliveries to the receivers' queues (src/notify/notify-queue.ts); resolves with those dropped from a full backlog. */
  enqueue(
    deliveries: readonly Delivery[],
  ): Promise<ReadonlyArray<{ receiver: string; event: Pick<NotifyEvent, 'id' | 'type'> }>>;
  log: Logger;
  /** converge_notifications_total{receiver, type, result}. */
  counter: Counter<'receiver' | 'type' | 'result'>;
  /** The prefix's event log (src/store/event-log.ts). */
  source: NotifyLog;
  pollMs?: number;
  retryMs?: number;
  now?: () => Date;
}

/** One term's reading of the log: ended by `stop()`, which wakes its wait. */
interface Reading {
  stopped: boolean;
  wake: (() => void) | undefined;
  done: Promise<void>;
}

/** The context an entry's events need from the projection: only rollout failures (build logs) and pending deletes read it. */
function needsContext(event: RecordedEvent | undefined): boolean {
  return (
    event !== undefined &&
    ((event.type === 'revision' && event.revision !== null) ||
      (event.type === 'decided' && event.reason === 'DeletePending'))
  );
}

export class Notifier {
  private readonly options: NotifierOptions;
  private reading: Reading | undefined;
  private failing = false;
  /** applied_state_lost not yet taken by Redis: queued before the log's next batch (appliedStateLost). */
  private lost: NotifyEvent | undefined;
  /** Per receiver: when its last drop warning was logged, and the deliveries dropped since. */
  private readonly drops = new Map<string, { warnedAt: number; since: number }>();

  constructor(options: NotifierOptions) {
    this.options = options;
  }

  /**
   * A term as leader begins: the log is read from the kept cursor on. When none is kept (the prefix's first leader, or
   * a Redis that lost it), the log's newest entry is taken before this returns, so what the term records is read.
   */
  async start(): Promise<void> {
    if (this.reading) return;
    const reading: Reading = { stopped: false, wake: undefined, done: Promise.resolve() };
    this.reading = reading;
    const position = await this.options.source
      .notifyCursor()
      .start(RESUME_MAX_AGE_MS)
      .catch(() => undefined);
    reading.done = this.read(reading, position);
  }

  /** The term ended: reading stops; the batch in progress gets a moment (what it did not queue is read by the next leader). */
  async stop(): Promise<void> {
    const reading = this.reading;
    this.reading = undefined;
    this.lost = undefined;
    if (!reading) return;
    reading.stopped = true;
    reading.wake?.();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([reading.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS)))]);
    clearTimeout(timer);
  }

  /**
   * Redis lost converge's records at `lostAt` (the applied-state watch): one applied_state_lost, sent while this replica
   * leads. It is queued by the read loop, which tries again until Redis takes it (a Redis that just restarted may not
   * answer every connection yet); the term's end forgets it (the next term is told again: lead() in src/daemon/daemon.ts).
   */
  appliedStateLost(lostAt: string, manifestVersion: NotifyEvent['manifestVersion']): void {
    const reading = this.reading;
    if (!reading) return;
    this.lost = appliedStateLostEvent(lostAt, manifestVersion, this.now());
    reading.wake?.();
  }

  private now(): string {
    return (this.options.now ?? (() => new Date()))().toISOString();
  }

  private async read(reading: Reading, start: string | undefined): Promise<void> {
    let position = start;
    while (!reading.stopped) {
      let full: boolean;
      try {
        ({ position, full } = await this.step(position));
        if (this.failing) this.options.log.info({}, 'notifications: the event log is read and deliveries queued again');
        this.failing = false;
      } catch (error) {
        if (!this.failing)
          this.options.log.warn(
            { error: (error as Error)?.message?.split('\n')[0] },
            'notifications: the event log could not be read or the deliveries queued (Redis); the same entries are tried again',
          );
        this.failing = true;
        await this.pause(reading, this.options.retryMs ?? RETRY_MS);
        continue;
      }
      if (!full) await this.pause(reading, this.options.pollMs ?? POLL_MS);
    }
  }

  /** One batch: applied_state_lost if it waits, the entries after `position` queued, then the cursor moved past them; whether the batch was full. */
  private async step(start: string | undefined): Promise<{ position: string; full: boolean }> {
    const { source } = this.options;
    const lost = this.lost;
    if (lost) {
      await this.queue(this.deliveriesOf([lost]));
      if (this.lost === lost) this.lost = undefined;
    }
    const cursor = source.notifyCursor();
    const position = start ?? (await cursor.start(RESUME_MAX_AGE_MS));
    const entries = await source.after(position, BATCH);
    if (entries.length === 0) return { position, full: false };
    await this.queueEntries(entries);
    const last = entries[entries.length - 1]!.id;
    await cursor.advance(last);
    return { position: last, full: entries.length === BATCH };
  }

  private pause(reading: Reading, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        reading.wake = undefined;
        resolve();
      }
      reading.wake = done;
    });
  }

  /** The events of a batch of entries, to the receivers that want them; throws when Redis did not take them. */
  private async queueEntries(entries: ReadonlyArray<{ id: string; event: RecordedEvent | undefined }>): Promise<void> {
    const keys = [...new Set(entries.filter((e) => needsContext(e.event)).map((e) => e.event!.key))];
    const states = await this.options.source.statesOf(keys);
    const events: NotifyEvent[] = [];
    for (const { id, event } of entries) {
      if (!event) continue;
      const state = states.get(event.key);
      const context: EntryContext = {
        deploymentId: state?.deploymentId,
        pendingDeleteSince: state?.pendingDelete?.since,
      };
      events.push(...notifyEventsOf({ id, event } satisfies LogEntry, context));
    }
    await this.queue(this.deliveriesOf(events));
  }

  private deliveriesOf(events: readonly NotifyEvent[]): Delivery[] {
    const out: Delivery[] = [];
    for (const event of events)
      for (const receiver of this.options.receivers)
        if (receiverWants(receiver, event)) out.push({ receiver: receiver.name, event });
    return out;
  }

  private async queue(deliveries: readonly Delivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    this.dropped(await this.options.enqueue(deliveries));
    for (const d of deliveries)
      this.options.log.debug(
        {
          receiver: d.receiver,
          event: d.event.type,
          delivery: d.event.id,
          resource: `${d.event.resource.kind}/${d.event.resource.name}`,
        },
        'notification queued',
      );
  }

  /**
   * Deliveries dropped from a receiver's full backlog (the oldest first): counted `dropped`, and a warning naming the
   * receiver (never its URL) at its first drop and at most once a minute after, with the count since.
   */
  private dropped(dropped: ReadonlyArray<{ receiver: string; event: Pick<NotifyEvent, 'id' | 'type'> }>): void {
    const now = Date.now();
    for (const d of dropped) {
      this.options.counter.inc({ receiver: d.receiver, type: d.event.type, result: 'dropped' });
      const drops = this.drops.get(d.receiver) ?? { warnedAt: -Infinity, since: 0 };
      drops.since += 1;
      this.drops.set(d.receiver, drops);
    }
    for (const [receiver, drops] of this.drops) {
      if (drops.since === 0 || now - drops.warnedAt < DROP_WARN_MS) continue;
      const limit = this.options.receivers.find((r) => r.name === receiver)?.backlog;
      this.options.log.warn(
        { receiver, dropped: drops.since, backlog: limit },
        `notifications: receiver "${receiver}" is not keeping up; its backlog is full and its oldest waiting deliveries were dropped`,
      );
      drops.warnedAt = now;
      drops.since = 0;
    }
  }

  /** One line and one count per attempt's end (the delivery worker's listener); the receiver by name only. */
  delivered(receiver: string, event: Pick<NotifyEvent, 'id' | 'type'>, result: DeliveryResult, detail: string): void {
    this.options.counter.inc({ receiver, type: event.type, result });
    const fields = { receiver, event: event.type, delivery: event.id, result, detail };
    if (result === 'delivered') this.options.log.info(fields, 'notification delivered');
    else if (result === 'skipped') this.options.log.debug(fields, 'notification skipped');
    else if (result === 'retried') this.options.log.warn(fields, 'notification not delivered; retrying with backoff');
    else this.options.log.warn(fields, 'notification not delivered; given up');
  }
}
