// The daemon's notifications over a Redis of their own: a term that begins while Redis is away (the delivery worker
// does not start) still queues applied_state_lost, and its worker is started again until it runs, so it is delivered.
import { Redis } from 'ioredis';
import pino from 'pino';
import { Counter, Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { NotifyEvent } from '../../src/core/notify/events.js';
import type { ReceiverConfig } from '../../src/core/notify/receivers.js';
import { DaemonNotifications } from '../../src/notify/daemon-notifications.js';
import { EventLogStore } from '../../src/store/event-log.js';
import { redisChild } from '../e2e/helpers.js';
import { testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const OPS: ReceiverConfig = {
  name: 'ops',
  type: 'webhook',
  events: ['applied_state_lost'],
  timeoutMs: 1_000,
  inFlight: 1,
  backlog: 10,
  env: { url: 'U' },
};

describe('the daemon notifications across a Redis that is away when a term begins', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });

  it('a worker that does not start is started again; applied_state_lost is queued and delivered once Redis answers', async () => {
    const redis = await redisChild();
    cleanups.push(() => redis.remove());
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
    client.on('error', () => undefined);
    cleanups.push(async () => client.disconnect());
    const sent: NotifyEvent[] = [];
    const notifications = new DaemonNotifications(
      {
        receivers: [OPS],
        deliver: async (_receiver, event) => (sent.push(event), { outcome: 'delivered', status: 200 }),
        close: async () => undefined,
      },
      () => undefined,
    );
    const prefix = testPrefix('daemon-notify');
    const counter = new Counter({
      name: 'n_total',
      help: 'h',
      labelNames: ['receiver', 'type', 'result'] as const,
      registers: [new Registry()],
    });
    await notifications.open({
      settings: { redisUrl: redis.url, redisPrefix: prefix },
      prefix,
      log: pino({ level: 'silent' }),
      source: new EventLogStore(client, prefix),
      counter,
    });
    cleanups.push(() => notifications.close());

    await redis.stop('SIGKILL');
    // The worker's connection is refused; a failed start is only warned about (lead() in src/daemon/daemon.ts).
    await notifications.startWorker().catch(() => undefined);
    notifications.appliedStateLost('2026-01-01T00:00:00.000Z', null);
    await redis.start(); // empty, as after a restart without persistence
    await until('applied_state_lost delivered', () => sent.length > 0, 30_000, 50);
    expect(sent).toMatchObject([{ type: 'applied_state_lost', resource: { kind: 'Daemon', name: 'applied-state' } }]);

    // The term ends: the worker and the retries stop (close() would hang on a worker left running).
    await notifications.stopWorker();
    expect(sent).toHaveLength(1);
  }, 60_000);
});
