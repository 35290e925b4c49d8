// `converge history` on bad input: a malformed name and a name Redis knows nothing of exit 1 in one line with a did-you-mean; a known one prints its events.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/core/resource-record.js';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import { fenceKey } from '../../src/leader/lease.js';
import { EventLogStore } from '../../src/store/event-log.js';
import { ReconcileRecordStore } from '../../src/store/reconcile-record.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { seedStates } from '../helpers/event-log-store.js';

const prefix = testPrefix('history-cli');
let redis: Redis;

const EVENT: RecordedEvent = {
  key: 'Deployment/support-agent',
  at: new Date().toISOString(),
  type: 'write_done',
  reason: 'updated',
  message: 'job j1 updated',
  manifests: null,
  job: { id: 'j1' },
  revision: null,
  by: 'replica-a',
};
const STATE = {
  key: 'Deployment/support-agent',
  kind: 'Deployment',
  name: 'support-agent',
  file: 'support-agent.yaml',
  action: 'noop',
  sync: { status: 'synced', reason: 'Applied', message: 'job j1 updated' },
  health: { status: 'healthy', reason: 'RevisionDeployed', message: 'deployed' },
  reason: null,
  error: null,
  drift: null,
  heldAtLastGood: false,
} as ResourceState;

beforeAll(async () => {
  redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  await new EventLogStore(redis, prefix).append([EVENT]);
  await seedStates(redis, prefix, [STATE]);
  // The leader's record of its last reconcile: the service has Deployment/stray-worker, which no manifest declares.
  const record = {
    by: 'replica-a',
    history: [],
    lastSuccessfulReconcileAt: null,
    reconciles: { total: 1, failed: 0, byTrigger: { startup: 1 } },
    manifests: { loaded: true, everLoaded: true, error: null },
    orphans: ['Deployment/stray-worker'],
  };
  expect(
    await new ReconcileRecordStore(redis, prefix, fenceKey(prefix)).write({ record, plan: null, fence: undefined }),
  ).toBe(true);
});
afterAll(async () => {
  await closeRedis(redis);
  await dropPrefix(prefix);
});

const history = (...args: string[]) =>
  runCapture(['history', ...args, '--redis-url', REDIS_URL, '--redis-prefix', prefix]);

describe('converge history: names', () => {
  it('a known name prints its events, exit 0', async () => {
    const known = await history('support-agent');
    expect(known.code, known.stderr).toBe(0);
    expect(known.stdout).toMatch(/^Deployment\/support-agent: 1 event, newest first/);
  });

  it('a name Redis knows nothing of exits 1 in one line, with the nearest known name', async () => {
    const typo = await history('suport-agent');
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe('');
    expect(typo.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(typo.stderr).toContain(`no resource Deployment/suport-agent is known on prefix ${prefix}`);
    expect(typo.stderr).toContain('did you mean "Deployment/support-agent"?');
    const none = await history('OAuthProvider/zzzzzzzzzzzz');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('converge status lists the resources the daemon knows');
  });

  it('an orphan (the service has it, no manifest declares it) is known: no events, exit 0; its typo names it', async () => {
    const orphan = await history('stray-worker');
    expect(orphan.code, orphan.stderr).toBe(0);
    expect(orphan.stdout).toBe(
      `Deployment/stray-worker: no events recorded on prefix ${prefix}: the service has it and no manifest declares it (an orphan: converge writes nothing to it)\n`,
    );
    const json = await history('stray-worker', '--output', 'json');
    expect([json.code, JSON.parse(json.stdout)]).toEqual([0, { resource: 'Deployment/stray-worker', events: [] }]);
    const typo = await history('stray-workr');
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('did you mean "Deployment/stray-worker"?');
  });

  it('a malformed name exits 1 with the naming rule and the valid form', async () => {
    const bad = await history('Bad Name!');
    expect(bad.code).toBe(1);
    expect(bad.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain(
      '"Bad Name!" is not a resource name: a metadata.name is lowercase letters, digits and dashes',
    );
    expect(bad.stderr).toContain('did you mean "bad-name"?');
    const kinded = await history('Deployment/Web_App');
    expect(kinded.code).toBe(1);
    expect(kinded.stderr).toContain('did you mean "web-app"?');
  });
});
