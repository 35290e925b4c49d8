// The notifier: only the leader queues deliveries, each receiver gets what its filters ask for, a burst of publications
// is read once, and a Redis that does not take deliveries never blocks the caller.
import pino from 'pino';
import { Registry, Counter } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { NotifyEvent } from '../core/notify/events.js';
import type { ReceiverConfig } from '../core/notify/receivers.js';
import { Notifier, type Publication } from './notifier.js';
import type { ResourceStatus } from '../daemon/status/status-row.js';

const RECEIVERS: ReceiverConfig[] = [
  { name: 'ops', type: 'webhook', events: ['rollout_failed', 'rollout_succeeded'], timeoutMs: 1_000, inFlight: 2, backlog: 100, env: { url: 'U' } },
  { name: 'support-only', type: 'slack', events: ['rollout_failed'], resources: ['support-*'], timeoutMs: 1_000, inFlight: 2, backlog: 100, env: { url: 'S' } },
];

function row(name: string, health: ResourceStatus['health']): ResourceStatus {
  return {
    key: `Deployment/${name}`, kind: 'Deployment', name, file: null, action: 'noop', state: 'synced',
    sync: { status: 'synced', reason: 'Synced', message: '' }, health, reason: null, error: null, drift: null, heldAtLastGood: false, job: null,
  };
}

const building: ResourceStatus['health'] = { status: 'progressing', reason: 'RevisionBuilding', message: '', revisionId: 'r2' };
const failed: ResourceStatus['health'] = { status: 'degraded', reason: 'RevisionBuildFailed', message: 'BUILD_FAILED', revisionId: 'r2', revisionStatus: 'BUILD_FAILED' };

function publication(rows: ResourceStatus[]): Publication {
  return { resources: rows, manifestVersion: { kind: 'git', id: 'a'.repeat(40) }, appliedState: { lost: false, lostAt: null } };
}

function setup(leading: () => boolean, enqueueSome: (d: ReadonlyArray<{ receiver: string; event: NotifyEvent }>) => Promise<void>) {
  const enqueue = async (d: ReadonlyArray<{ receiver: string; event: NotifyEvent }>) => {
    await enqueueSome(d);
    return [];
  };
  const counter = new Counter({ name: 'n_total', help: 'h', labelNames: ['receiver', 'type', 'result'] as const, registers: [new Registry()] });
  return new Notifier({ receivers: RECEIVERS, enqueue, leading, log: pino({ level: 'silent' }), counter });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Notifier', () => {
  it('queues each event for the receivers whose filters take it; a standby queues nothing', async () => {
    const queued: Array<{ receiver: string; event: NotifyEvent }> = [];
    let leading = false;
    const notifier = setup(() => leading, async (d) => void queued.push(...d));
    notifier.derive(publication([row('support-a', building), row('billing', building)]));
    notifier.derive(publication([row('support-a', failed), row('billing', failed)]));
    expect(queued).toEqual([]);
    leading = true;
    notifier.reset();
    notifier.derive(publication([row('support-a', failed), row('billing', failed)]));
    await Promise.resolve();
    expect(queued.map((d) => `${d.receiver} ${d.event.type} ${d.event.resource.name}`)).toEqual(['ops rollout_failed support-a', 'support-only rollout_failed support-a', 'ops rollout_failed billing']);
  });

  it('reads a burst of publications once, at the end of the window', () => {
    vi.useFakeTimers();
    const reads: number[] = [];
    const notifier = setup(() => true, async () => undefined);
    for (let i = 0; i < 50; i++) {
      notifier.published(() => {
        reads.push(i);
        return publication([row('a', building)]);
      });
    }
    expect(reads).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(reads).toEqual([49]);
    notifier.published(() => publication([]));
    notifier.stop();
    vi.advanceTimersByTime(1_000);
    expect(reads).toEqual([49]);
  });

  it('returns at once while Redis does not answer, and drops beyond its backlog instead of piling up', () => {
    let calls = 0;
    const notifier = setup(() => true, () => {
      calls += 1;
      return new Promise<void>(() => undefined);
    });
    for (let i = 0; i < 150; i++) notifier.derive(publication([row(`r${i}`, failed)]));
    expect(calls).toBe(100);
  });
});
