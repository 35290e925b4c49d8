// The notification delivery queue on the real Redis: one delivery per id however often it is enqueued, retries with
// backoff until delivered, bounded attempts, a refusal not retried, and a skipped delivery counted as such.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventId, type DeliveryAnswer, type DeliveryResult, type NotifyEvent } from '../../src/core/notify/events.js';
import { openNotifyQueue, type NotifyQueue } from '../../src/notify/notify-queue.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

function event(name: string, occurrence = 'r1'): NotifyEvent {
  const resource = { kind: 'Deployment', name };
  return {
    id: eventId(resource, 'rollout_failed', occurrence),
    type: 'rollout_failed',
    resource,
    reason: 'RevisionBuildFailed',
    message: 'failed',
    revisionId: occurrence,
    manifestVersion: null,
    time: '2026-11-26T12:00:00.000Z',
  };
}

const RECEIVERS = [
  { name: 'ops', inFlight: 2, backlog: 100 },
  { name: 'chat', inFlight: 2, backlog: 100 },
];

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('notify queue', () => {
  const prefix = testPrefix('notify-queue');
  let queue: NotifyQueue;
  const results: Array<{ receiver: string; id: string; result: DeliveryResult; detail: string }> = [];
  const calls: Array<{ receiver: string; name: string }> = [];
  /** Per resource name, the answers its deliveries get in turn (the last one repeats). */
  const script = new Map<string, DeliveryAnswer[]>();

  beforeAll(async () => {
    queue = await openNotifyQueue({ redisUrl: REDIS_URL, redisPrefix: prefix }, RECEIVERS, {
      attempts: 3,
      backoffMs: 20,
    });
    await queue.startWorker(
      async (receiver, e) => {
        calls.push({ receiver, name: e.resource.name });
        const answers = script.get(e.resource.name) ?? [{ outcome: 'delivered', status: 200 }];
        return answers.length > 1 ? answers.shift()! : answers[0]!;
      },
      (receiver, e, result, detail) => results.push({ receiver, id: e.id, result, detail }),
    );
  });
  afterAll(async () => {
    await queue.close();
    await dropPrefix(prefix);
  });

  const resultsOf = (name: string) => results.filter((r) => r.id === event(name).id);

  it('sends an event once per receiver, however many times (and by whom) it is enqueued', async () => {
    const e = event('once');
    await queue.enqueue([
      { receiver: 'ops', event: e },
      { receiver: 'chat', event: e },
    ]);
    await queue.enqueue([{ receiver: 'ops', event: e }]);
    await until(() => resultsOf('once').length === 2);
    // A second producer (another replica) enqueues the same event after it was delivered.
    const other = await openNotifyQueue({ redisUrl: REDIS_URL, redisPrefix: prefix }, RECEIVERS);
    await other.enqueue([{ receiver: 'ops', event: { ...e, time: '2026-11-26T12:00:05.000Z' } }]);
    await other.close();
    await new Promise((r) => setTimeout(r, 300));
    expect(
      calls
        .filter((c) => c.name === 'once')
        .map((c) => c.receiver)
        .sort(),
    ).toEqual(['chat', 'ops']);
    expect(resultsOf('once').map((r) => r.result)).toEqual(['delivered', 'delivered']);
  });

  it('retries a failed attempt with backoff until delivered; gives up after the attempts; does not retry a refusal', async () => {
    script.set('flaky', [
      { outcome: 'retry', detail: 'answered 500' },
      { outcome: 'delivered', status: 200 },
    ]);
    script.set('down', [{ outcome: 'retry', detail: 'no answer within the timeout' }]);
    script.set('refused', [{ outcome: 'rejected', detail: 'answered 404' }]);
    script.set('nothing', [{ outcome: 'skipped', detail: 'the manifests are not read from a git commit' }]);
    await queue.enqueue(
      ['flaky', 'down', 'refused', 'nothing'].map((name) => ({ receiver: 'ops', event: event(name) })),
    );
    await until(
      () =>
        resultsOf('flaky').length === 2 &&
        resultsOf('down').length === 3 &&
        resultsOf('refused').length === 1 &&
        resultsOf('nothing').length === 1,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(resultsOf('flaky').map((r) => [r.result, r.detail])).toEqual([
      ['retried', 'answered 500'],
      ['delivered', 'answered 200'],
    ]);
    expect(resultsOf('down').map((r) => r.result)).toEqual(['retried', 'retried', 'failed']);
    expect(resultsOf('refused').map((r) => r.result)).toEqual(['rejected']);
    expect(resultsOf('nothing').map((r) => r.result)).toEqual(['skipped']);
  });
});

describe('notify worker close', () => {
  const prefix = testPrefix('notify-close');
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('gives a delivery that never ends its grace, then gives the attempt up; the next worker delivers it', async () => {
    const queue = await openNotifyQueue({ redisUrl: REDIS_URL, redisPrefix: prefix }, RECEIVERS, {
      attempts: 3,
      backoffMs: 20,
    });
    const results: Array<[DeliveryResult, string]> = [];
    let started = false;
    const worker = await queue.startWorker(
      () => {
        started = true;
        return new Promise<DeliveryAnswer>(() => undefined);
      },
      (_receiver, _e, result, detail) => results.push([result, detail]),
    );
    await queue.enqueue([{ receiver: 'ops', event: event('stuck') }]);
    await until(() => started);
    await worker.close(50);
    expect(results).toEqual([['retried', 'this replica stopped sending (stopping, or no longer the leader)']]);
    const next = await queue.startWorker(
      async () => ({ outcome: 'delivered', status: 200 }),
      (_receiver, _e, result, detail) => results.push([result, detail]),
    );
    await until(() => results.length === 2);
    expect(results[1]).toEqual(['delivered', 'answered 200']);
    await next.close();
    await queue.close();
  });
});
