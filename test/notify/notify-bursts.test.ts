// Receivers apart (issue 32), with the daemon's notifications on the real Redis and real receivers on loopback: under a
// stream of events, a receiver that hangs and one that always fails use only their own slots and their own bounded
// backlog; the good receiver gets every event while the hanging one's first requests still hang; drops are counted.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReceiverConfig } from '../../src/core/notify/receivers.js';
import { resolveReceivers } from '../../src/core/notify/receivers.js';
import { DaemonNotifications } from '../../src/notify/daemon-notifications.js';
import { createMetrics } from '../../src/daemon/telemetry/metrics.js';
import type { RecordedEvent } from '../../src/core/resource-record.js';
import { EventLogStore, recordKeys } from '../../src/store/event-log.js';
import { createSender } from '../../src/notify/sender.js';
import { startReceiver, type Receiver } from '../helpers/notify-receivers.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { dropPrefix, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const IN_FLIGHT = 2;
const BACKLOG = 15;
/** Writes to the event log, each failing a new revision of every resource: ROWS events per write, to every receiver. */
const WRITES = 12;
const ROWS = 10;
const EVENTS = WRITES * ROWS;

function failedRevision(name: string, revision: number): RecordedEvent {
  return {
    key: `Deployment/${name}`,
    at: new Date().toISOString(),
    type: 'revision',
    reason: 'RevisionBuildFailed',
    message: 'BUILD_FAILED',
    manifests: { kind: 'git', id: 'a'.repeat(40) },
    job: null,
    revision: { id: `r${revision}`, status: 'BUILD_FAILED' },
    by: 'test',
  };
}

function receiverConfig(name: string, timeoutMs: number, backlog: number): ReceiverConfig {
  return {
    name,
    type: 'webhook',
    events: ['rollout_failed'],
    timeoutMs,
    inFlight: IN_FLIGHT,
    backlog,
    env: { url: `${name.toUpperCase()}_URL` },
  };
}

/** A receiver's backlog in Redis: its deliveries not finished (queued, between retries, in flight). */
async function backlogInRedis(prefix: string, receiver: string): Promise<number> {
  const redis = rawRedis();
  try {
    const key = (state: string) => `${prefix}:converge-notify-${receiver}:${state}`;
    const counts = await Promise.all([
      redis.llen(key('wait')),
      redis.llen(key('paused')),
      redis.llen(key('active')),
      redis.zcard(key('delayed')),
      redis.zcard(key('prioritized')),
    ]);
    return counts.reduce((a, b) => a + b, 0);
  } finally {
    redis.disconnect();
  }
}

describe('notification receivers apart', () => {
  const prefix = testPrefix('notify-apart');
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await dropPrefix(prefix);
  });

  it('a hanging and a failing receiver do not delay the good one; their backlogs stay under the cap; drops are counted', async () => {
    const good = await startReceiver(() => 200);
    const hang = await startReceiver(() => 'hang');
    const fail = await startReceiver(() => 500);
    receivers.push(good, hang, fail);
    // The hanging receiver's requests time out only after a minute: nothing of it is freed while the test runs.
    // The good receiver's backlog holds the whole stream, however slowly a loaded machine sends: its own bound is not
    // what is tested here, only that the others' trouble never reaches it.
    const configs = [
      receiverConfig('good', 10_000, EVENTS),
      receiverConfig('hang', 60_000, BACKLOG),
      receiverConfig('fail', 10_000, BACKLOG),
    ];
    const resolved = resolveReceivers(configs, { GOOD_URL: good.url, HANG_URL: hang.url, FAIL_URL: fail.url });
    const sender = createSender(resolved, { userAgent: 'converge/test' });
    const lines: Array<Record<string, unknown>> = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write: (chunk: Buffer, _encoding, done) =>
          done(void lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>)),
      }),
    );
    const metrics = createMetrics({ processMetrics: false });
    const notifications = new DaemonNotifications(
      { receivers: configs, deliver: sender.deliver, close: () => sender.close() },
      () => undefined,
    );
    const redis = rawRedis();
    const record = new EventLogStore(redis, prefix);
    await notifications.open({
      settings: { redisUrl: REDIS_URL, redisPrefix: prefix },
      prefix,
      log,
      source: record,
      counter: metrics.notifications,
    });
    await notifications.startWorker();

    // The stream: each write to the log is read (the notifier's cursor passed it) before the next is made, while the
    // backlogs of the bad receivers are sampled.
    let maxBacklog = 0;
    const sample = async (): Promise<void> => {
      for (const name of ['hang', 'fail']) maxBacklog = Math.max(maxBacklog, await backlogInRedis(prefix, name));
    };
    const keys = recordKeys(prefix);
    for (let k = 1; k <= WRITES; k++) {
      await record.append(Array.from({ length: ROWS }, (_, i) => failedRevision(`svc-${i}`, k)));
      const last = (await redis.xrevrange(keys.log, '+', '-', 'COUNT', 1))[0]?.[0];
      await until(`write ${k} read`, async () => (await redis.get(keys.notifyCursor)) === last, 10_000, 5);
      await sample();
    }
    await until('every event delivered to the good receiver', () => good.delivered().length >= EVENTS, 30_000, 20);
    // By order, not time: the good receiver got its last event while the hanging receiver's first requests still hang;
    // it never got more than its own slots, so the good one's deliveries never waited for a slot the bad ones held.
    expect(hang.requests.length).toBeLessThanOrEqual(IN_FLIGHT);
    expect(hang.requests.every((r) => r.status === undefined && !r.closed)).toBe(true);
    expect(new Set(good.delivered().map((b) => b.id)).size).toBe(EVENTS);
    await sample();
    expect(maxBacklog).toBeLessThanOrEqual(BACKLOG);

    // Every event of the hanging receiver is accounted for: in its backlog (its slots included) or dropped.
    const value = async (receiver: string, result: string): Promise<number> =>
      parsePrometheusText(await metrics.render()).find(
        (s) =>
          s.name === 'converge_notifications_total' && s.labels.receiver === receiver && s.labels.result === result,
      )?.value ?? 0;
    await until(
      "the hanging receiver's drops counted",
      async () => (await value('hang', 'dropped')) + (await backlogInRedis(prefix, 'hang')) === EVENTS,
      10_000,
    );
    expect(await value('hang', 'dropped')).toBeGreaterThanOrEqual(EVENTS - BACKLOG);
    expect(await value('fail', 'dropped')).toBeGreaterThan(0);
    expect(await value('good', 'dropped')).toBe(0);
    expect(await value('good', 'delivered')).toBe(EVENTS);
    // One warning names the receiver (never its URL) at its first drop.
    const warned = lines.filter(
      (l) =>
        l.msg ===
        'notifications: receiver "hang" is not keeping up; its backlog is full and its oldest waiting deliveries were dropped',
    );
    expect(warned.length).toBe(1);
    expect(warned[0]).toMatchObject({ receiver: 'hang', backlog: BACKLOG });
    expect(JSON.stringify(lines)).not.toContain(hang.url);

    await notifications.close();
    redis.disconnect();
  }, 90_000);
});
