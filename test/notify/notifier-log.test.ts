// The notifier on the real Redis: it reads the prefix's event log from the cursor kept there, queues each entry's events to the receivers whose filters take them, moves the cursor only after they are queued, and a new leader goes on where the last stopped; an enqueue that fails is tried again, never dropped.
import pino from 'pino';
import { Counter, Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { NotifyEvent } from '../../src/core/notify/events.js';
import type { ReceiverConfig } from '../../src/core/notify/receivers.js';
import type { RecordedEvent } from '../../src/core/resource-record.js';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import { Notifier } from '../../src/notify/notifier.js';
import { EventLogStore, recordKeys } from '../../src/store/event-log.js';
import { dropPrefix, rawRedis, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { seedStates } from '../helpers/event-log-store.js';

const RECEIVERS: ReceiverConfig[] = [
  {
    name: 'ops',
    type: 'webhook',
    events: ['rollout_failed', 'rollout_succeeded', 'write_sent', 'applied_state_lost'],
    timeoutMs: 1_000,
    inFlight: 2,
    backlog: 100,
    env: { url: 'U' },
  },
  {
    name: 'support-only',
    type: 'slack',
    events: ['rollout_failed'],
    resources: ['support-*'],
    timeoutMs: 1_000,
    inFlight: 2,
    backlog: 100,
    env: { url: 'S' },
  },
];

function revision(name: string, id: string, reason: string, status: string): RecordedEvent {
  return {
    key: `Deployment/${name}`,
    at: new Date().toISOString(),
    type: 'revision',
    reason,
    message: `${id} ${status}`,
    manifests: { kind: 'git', id: 'a'.repeat(40) },
    job: null,
    revision: { id, status },
    by: 'test',
  };
}

type Queued = { receiver: string; event: NotifyEvent };

function notifier(record: EventLogStore, enqueue: (d: readonly Queued[]) => Promise<void>): Notifier {
  const counter = new Counter({
    name: 'n_total',
    help: 'h',
    labelNames: ['receiver', 'type', 'result'] as const,
    registers: [new Registry()],
  });
  return new Notifier({
    receivers: RECEIVERS,
    enqueue: async (d) => {
      await enqueue(d);
      return [];
    },
    source: record,
    log: pino({ level: 'silent' }),
    counter,
    pollMs: 20,
    retryMs: 50,
  });
}

describe('the notifier reads the event log', () => {
  const prefix = testPrefix('notifier-log');
  const redis = rawRedis();
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
  });

  it('queues each entry once per receiver that wants it, from the cursor on; a new leader resumes there; a failed enqueue is tried again', async () => {
    const record = new EventLogStore(redis, prefix);
    const keys = recordKeys(prefix);
    // Before any leader read the log: not sent by the first one (it starts at the newest entry).
    await record.append([revision('support-old', 'r0', 'RevisionBuildFailed', 'BUILD_FAILED')]);
    const queued: Queued[] = [];
    const first = notifier(record, async (d) => void queued.push(...d));
    await first.start();
    const state = {
      key: 'Deployment/support-a',
      kind: 'Deployment',
      name: 'support-a',
      file: null,
      action: 'noop',
      reason: null,
      error: null,
      drift: null,
      heldAtLastGood: false,
      job: null,
      sync: { status: 'synced', reason: 'Synced', message: '' },
      health: { status: 'degraded', reason: 'RevisionBuildFailed', message: '' },
      deploymentId: 'dep-a',
    } satisfies ResourceState;
    await record.append([
      revision('support-a', 'r1', 'RevisionBuilding', 'BUILDING'),
      revision('support-a', 'r1', 'RevisionBuildFailed', 'BUILD_FAILED'),
      revision('billing', 'r7', 'RevisionDeployed', 'DEPLOYED'),
    ]);
    await seedStates(redis, prefix, [state]);
    await until('the three entries read', () => queued.length >= 3, 10_000, 10);
    expect(queued.map((d) => `${d.receiver} ${d.event.type} ${d.event.resource.name} ${d.event.revisionId}`)).toEqual([
      'ops rollout_failed support-a r1',
      'support-only rollout_failed support-a r1',
      'ops rollout_succeeded billing r7',
    ]);
    // The build log context comes from the projection.
    expect(queued[0]!.event.deploymentId).toBe('dep-a');
    const last = (await redis.xrevrange(keys.log, '+', '-', 'COUNT', 1))[0]![0];
    await until('the cursor at the last entry', async () => (await redis.get(keys.notifyCursor)) === last, 10_000, 10);
    await first.stop();

    // A new leader: nothing read again; what comes next is read, also while Redis does not take its deliveries.
    let refuse = 2;
    const second: Queued[] = [];
    const next = notifier(record, async (d) => {
      if (refuse-- > 0) throw new Error("READONLY You can't write against a read only replica.");
      second.push(...d);
    });
    await next.start();
    await record.append([revision('billing', 'r8', 'RevisionBuildFailed', 'BUILD_FAILED')]);
    await until('the entry queued after two refusals', () => second.length > 0, 10_000, 10);
    expect(refuse).toBe(-1);
    expect(second.map((d) => `${d.receiver} ${d.event.type} ${d.event.resource.name} ${d.event.revisionId}`)).toEqual([
      'ops rollout_failed billing r8',
    ]);
    // The same revision's failure means the same delivery id on any replica (the queue's job id).
    expect(second[0]!.event.id).not.toBe(queued[0]!.event.id);
    await next.stop();
    expect(queued).toHaveLength(3);

    // applied_state_lost comes from the applied-state watch, not the log: queued only while this replica leads.
    const lost: Queued[] = [];
    const watcher = notifier(record, async (d) => void lost.push(...d));
    watcher.appliedStateLost('2026-11-28T09:00:00.000Z', null);
    await watcher.start();
    watcher.appliedStateLost('2026-11-28T09:00:00.000Z', null);
    await until('applied_state_lost queued', () => lost.length > 0, 10_000, 10);
    await watcher.stop();
    expect(lost.map((d) => `${d.receiver} ${d.event.type} ${d.event.resource.kind}/${d.event.resource.name}`)).toEqual([
      'ops applied_state_lost Daemon/applied-state',
    ]);

    // A cursor is never moved back (a deposed leader finishing a batch late).
    const cursor = record.notifyCursor();
    const now = await redis.get(keys.notifyCursor);
    await cursor.advance('1-0');
    expect(await redis.get(keys.notifyCursor)).toBe(now);
    // Nor is an entry older than the deliveries' memory read, wherever the kept cursor stands.
    const at = Number(now!.split('-')[0]);
    expect(await cursor.start(60_000, at + 1_000)).toBe(now);
    expect(await cursor.start(60_000, at + 120_000)).toBe(`${at + 60_000}-0`);
  });

  it('an applied_state_lost that Redis does not take (a connection not back yet after a restart) is tried again until queued', async () => {
    const record = new EventLogStore(redis, `${prefix}:lost`);
    let refusals = 2;
    const queued: Queued[] = [];
    const watcher = notifier(record, async (d) => {
      if (d.some((q) => q.event.type === 'applied_state_lost') && refusals-- > 0)
        throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
      queued.push(...d);
    });
    await watcher.start();
    watcher.appliedStateLost('2026-11-28T10:00:00.000Z', null);
    await until('applied_state_lost queued after two refusals', () => queued.length > 0, 10_000, 10);
    await watcher.stop();
    expect(refusals).toBe(-1);
    expect(
      queued.map((d) => `${d.receiver} ${d.event.type} ${d.event.resource.kind}/${d.event.resource.name}`),
    ).toEqual(['ops applied_state_lost Daemon/applied-state']);
  });
});
