// The daemon's notifier: at each publication of status, the events since the last one go to the delivery queue (leader only, never awaited).
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { ManifestVersion } from '../core/manifest-version.js';
import type { DeliveryResult, NotifyEvent } from '../core/notify/events.js';
import { receiverWants, type ReceiverConfig } from '../core/notify/receivers.js';
import { eventsFrom, snapshotOf, type PublishedRow, type PublishedState } from './notify-events.js';

/** Enqueues waiting for Redis at once at most; beyond that a publication's events are dropped (one warning). */
const MAX_BACKLOG = 100;
/**
 * Publications within this window are read as one (the status as it stands at its end): a burst of job ends costs one
 * pass over the rows, not one per job. Only states that last shorter than it can be missed, and none of the events'
 * states do (a job's end stays on its row until the next reconcile, a revision's health until the next rollout).
 */
const COALESCE_MS = 100;
/** A receiver whose backlog keeps overflowing is warned about at most this often (with the count dropped since). */
const DROP_WARN_MS = 60_000;

export interface NotifierOptions {
  /** The receivers as configured: names and filters, never a URL or a secret. */
  receivers: readonly ReceiverConfig[];
  /** Adds deliveries to the receivers' queues (src/notify/notify-queue.ts); resolves with those dropped from a full backlog. */
  enqueue(deliveries: ReadonlyArray<{ receiver: string; event: NotifyEvent }>): Promise<ReadonlyArray<{ receiver: string; event: Pick<NotifyEvent, 'id' | 'type'> }>>;
  /** Whether this replica leads: only the leader turns transitions into deliveries. */
  leading(): boolean;
  log: Logger;
  /** converge_notifications_total{receiver, type, result}. */
  counter: Counter<'receiver' | 'type' | 'result'>;
  now?: () => Date;
}

/** What the daemon publishes at one moment (its /status rows, the manifests read, the applied-state watch). */
export interface Publication {
  resources: readonly PublishedRow[];
  manifestVersion: Pick<ManifestVersion, 'kind' | 'id' | 'uncommitted'> | null | undefined;
  appliedState: { lost: boolean; lostAt: string | null };
}

export class Notifier {
  private readonly options: NotifierOptions;
  private last: PublishedState | undefined;
  private backlog = 0;
  private warnedFull = false;
  private read: (() => Publication) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Per receiver: when its last drop warning was logged, and the deliveries dropped since. */
  private readonly drops = new Map<string, { warnedAt: number; since: number }>();

  constructor(options: NotifierOptions) {
    this.options = options;
  }

  /**
   * The hook: called each time the daemon's status changed (after a reconcile, a job's end, a rollout poll, an
   * applied-state loss), with a reader of what it publishes. Returns at once; within COALESCE_MS the events since the
   * last publication are derived and their deliveries queued in the background.
   */
  published(read: () => Publication): void {
    this.read = read;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const current = this.read;
      this.read = undefined;
      if (current) this.derive(current());
    }, COALESCE_MS);
    this.timer.unref();
  }

  /** Stops: a publication not read yet is dropped. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.read = undefined;
  }

  /** Derives the events between the last publication and this one and queues their deliveries (leader only). */
  derive(publication: Publication): void {
    const next = snapshotOf(publication.resources, this.last, publication.manifestVersion, publication.appliedState);
    const previous = this.last;
    this.last = next;
    if (!this.options.leading()) return;
    const now = (this.options.now ?? (() => new Date()))().toISOString();
    const deliveries: Array<{ receiver: string; event: NotifyEvent }> = [];
    for (const event of eventsFrom(previous, next, now)) {
      for (const receiver of this.options.receivers) if (receiverWants(receiver, event)) deliveries.push({ receiver: receiver.name, event });
    }
    if (deliveries.length === 0) return;
    if (this.backlog >= MAX_BACKLOG) {
      if (!this.warnedFull) this.options.log.warn({ dropped: deliveries.length }, 'notifications: Redis is not taking deliveries; events dropped until it does');
      this.warnedFull = true;
      for (const d of deliveries) this.options.counter.inc({ receiver: d.receiver, type: d.event.type, result: 'dropped' });
      return;
    }
    this.backlog += 1;
    this.options
      .enqueue(deliveries)
      .then((dropped) => {
        this.warnedFull = false;
        this.dropped(dropped);
        for (const d of deliveries) this.options.log.debug({ receiver: d.receiver, event: d.event.type, delivery: d.event.id, resource: `${d.event.resource.kind}/${d.event.resource.name}` }, 'notification queued');
      })
      .catch((error: unknown) => {
        this.options.log.warn({ error: (error as Error)?.message?.split('\n')[0], events: deliveries.length }, 'notifications: the deliveries could not be queued (Redis)');
        for (const d of deliveries) this.options.counter.inc({ receiver: d.receiver, type: d.event.type, result: 'dropped' });
      })
      .finally(() => (this.backlog -= 1));
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
      this.options.log.warn({ receiver, dropped: drops.since, backlog: limit }, `notifications: receiver "${receiver}" is not keeping up; its backlog is full and its oldest waiting deliveries were dropped`);
      drops.warnedAt = now;
      drops.since = 0;
    }
  }

  /** A new term as leader: the next publication is compared with nothing (what stands is sent unless sent already). */
  reset(): void {
    this.last = undefined;
    this.read = undefined;
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
