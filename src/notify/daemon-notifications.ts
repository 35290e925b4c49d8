// The daemon's notifications (docs/notifications.md): the delivery queue, and while this replica leads its worker and the notifier reading the event log.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { openNotifyQueue, type NotifyQueue, type NotifyWorker } from './notify-queue.js';
import type { RedisSettings } from '../store/redis.js';
import type { Deliver, NotifyEvent } from '../core/notify/events.js';
import type { ReceiverConfig } from '../core/notify/receivers.js';
import { Notifier, type NotifyLog } from './notifier.js';

/** A delivery in flight when the term or the daemon ends gets this long before its attempt is given up (docs/notifications.md). */
const NOTIFY_GRACE_MS = 2_000;
/** A delivery worker that did not start (Redis away or just restarted) is started again this much later, while the term lasts. */
const WORKER_RETRY_MS = 1_000;

/**
 * The receivers as configured (names and filters) and the sender, which alone holds their URLs and secrets (the
 * daemon's `notify` option, src/daemon/daemon-options.ts); undefined or no receiver: nothing is opened.
 */
type NotifyOption = { receivers: readonly ReceiverConfig[]; deliver: Deliver; close(): Promise<void> } | undefined;

/** What opening the notifications takes from the daemon. */
export interface NotificationsOpen {
  settings: RedisSettings;
  /** The Redis prefix of the daemon's jobs (the queue lives under it). */
  prefix: string;
  log: Logger;
  /** The prefix's event log: the notifier reads its entries from the cursor kept there. */
  source: NotifyLog;
  counter: Counter<'receiver' | 'type' | 'result'>;
}

/** The notifications of one daemon; with no receiver configured each method does nothing. */
export class DaemonNotifications {
  private readonly notify: NotifyOption;
  private readonly warn: (source: string, error: unknown) => void;
  private queue: NotifyQueue | undefined;
  private worker: NotifyWorker | undefined;
  private notifier: Notifier | undefined;
  private log: Logger | undefined;
  /** The current term's sending: ended by stopWorker(), which also ends the worker's start tried again meanwhile. */
  private term: { ended: AbortController; starting: Promise<void> } | undefined;

  constructor(notify: NotifyOption, warn: (source: string, error: unknown) => void) {
    this.notify = notify;
    this.warn = warn;
  }

  /** Opens the delivery queue when receivers are configured (its worker runs while this replica leads). */
  async open(options: NotificationsOpen): Promise<void> {
    const notify = this.notify;
    if (!notify || notify.receivers.length === 0) return;
    const log = options.log.child({ component: 'notify' });
    this.log = log;
    this.queue = await openNotifyQueue({ ...options.settings, redisPrefix: options.prefix }, notify.receivers, { log });
    this.notifier = new Notifier({
      receivers: notify.receivers,
      enqueue: (deliveries) => this.queue!.enqueue(deliveries),
      source: options.source,
      log,
      counter: options.counter,
    });
    log.info(
      {
        receivers: notify.receivers.map((r) => `${r.name} (${r.type}, ${r.inFlight} in flight, backlog ${r.backlog})`),
      },
      'notifications on: the leader sends each event once per receiver',
    );
  }

  /** Redis lost converge's records at `lostAt`: applied_state_lost, once per loss, while this replica leads. */
  appliedStateLost(lostAt: string | null, manifestVersion: NotifyEvent['manifestVersion'] | undefined): void {
    if (lostAt) this.notifier?.appliedStateLost(lostAt, manifestVersion ?? null);
  }

  /**
   * Starts sending notifications (a new term as leader): the notifier reads the log from its cursor (its deliveries
   * wait in the queues), and the worker starts; a worker that does not start is started again every WORKER_RETRY_MS
   * until it does or the term ends (a failed start must not leave the term without deliveries).
   */
  async startWorker(): Promise<void> {
    const { queue, notifier, notify } = this;
    if (!queue || !notifier || !notify || this.term) return;
    const term = { ended: new AbortController(), starting: Promise.resolve() };
    this.term = term;
    await notifier.start();
    const started = await this.tryWorker(queue, notify.deliver, notifier, term.ended.signal);
    if (!started) term.starting = this.retryWorker(queue, notify.deliver, notifier, term.ended.signal);
  }

  /** One start of the delivery worker; whether it runs now (a start that ends after the term is closed at once). */
  private async tryWorker(
    queue: NotifyQueue,
    deliver: Deliver,
    notifier: Notifier,
    ended: AbortSignal,
  ): Promise<boolean> {
    try {
      const worker = await queue.startWorker(deliver, (receiver, event, result, detail) =>
        notifier.delivered(receiver, event, result, detail),
      );
      if (ended.aborted) await worker.close(0);
      else this.worker = worker;
      return true;
    } catch (error) {
      this.warn('notifications', error);
      return false;
    }
  }

  private async retryWorker(
    queue: NotifyQueue,
    deliver: Deliver,
    notifier: Notifier,
    ended: AbortSignal,
  ): Promise<void> {
    this.log?.warn(
      { retryInMs: WORKER_RETRY_MS },
      'notifications: the delivery worker did not start (Redis); it is started again until it does',
    );
    while (!ended.aborted) {
      await sleep(WORKER_RETRY_MS, undefined, { signal: ended }).catch(() => undefined);
      if (ended.aborted) return;
      if (await this.tryWorker(queue, deliver, notifier, ended)) {
        if (!ended.aborted)
          this.log?.info({}, 'notifications: the delivery worker started; queued deliveries are sent');
        return;
      }
    }
  }

  /** Stops sending (the term ended): reading the log stops; deliveries in flight get a moment, then wait for the next leader. */
  async stopWorker(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    term?.ended.abort();
    await this.notifier?.stop();
    await term?.starting;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.close(NOTIFY_GRACE_MS);
  }

  async close(): Promise<void> {
    await this.stopWorker();
    await this.queue?.close().catch((e: unknown) => this.warn('notifications', e));
    await this.notify?.close().catch((e: unknown) => this.warn('notifications', e));
  }
}
