// The sender against real receivers on loopback: each kind's request, the timeout of a receiver that never answers,
// the answer's classification, build log lines through the injected reader, and no URL in what it reports.
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { eventId, type NotifyEvent } from '../../src/core/notify/events.js';
import type { ResolvedReceiver } from '../../src/core/notify/receivers.js';
import { createSender } from '../../src/notify/sender.js';
import { startReceiver, type Receiver } from '../helpers/notify-receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(answer);
  receivers.push(r);
  return r;
}

const SHA = '3f2a9c1'.padEnd(40, '0');
const EVENT: NotifyEvent = {
  id: eventId({ kind: 'Deployment', name: 'support' }, 'rollout_failed', 'rev-9'),
  type: 'rollout_failed',
  resource: { kind: 'Deployment', name: 'support' },
  reason: 'RevisionBuildFailed',
  message: 'revision rev-9 ended BUILD_FAILED',
  revisionId: 'rev-9',
  revisionStatus: 'BUILD_FAILED',
  deploymentId: 'dep-1',
  manifestVersion: { kind: 'git', id: SHA },
  time: '2026-11-26T12:00:00.000Z',
};

function webhook(url: string, extra: Partial<ResolvedReceiver> = {}): ResolvedReceiver {
  return {
    name: 'ops',
    type: 'webhook',
    events: ['rollout_failed'],
    timeoutMs: 2_000,
    inFlight: 2,
    backlog: 100,
    env: { url: 'OPS_URL', secret: 'OPS_SECRET' },
    url,
    secret: 'signing-key',
    ...extra,
  };
}

describe('sender', () => {
  it('webhook: headers, signature and the build log lines the injected reader gives (the last 20)', async () => {
    const r = await receiver();
    const asked: string[] = [];
    const sender = createSender([webhook(`${r.url}/hook`)], {
      userAgent: 'converge/test',
      buildLogs: async (deploymentId, revisionId) => {
        asked.push(`${deploymentId}/${revisionId}`);
        return Array.from({ length: 30 }, (_, i) => `line ${i + 1}`);
      },
    });
    expect(await sender.deliver('ops', EVENT)).toEqual({ outcome: 'delivered', status: 200 });
    await sender.close();
    const got = r.requests[0]!;
    expect(got.headers).toMatchObject({
      'x-converge-event': 'rollout_failed',
      'x-converge-delivery': EVENT.id,
      'content-type': 'application/json',
      'user-agent': 'converge/test',
    });
    expect(got.headers['x-converge-signature-256']).toBe(
      `sha256=${createHmac('sha256', 'signing-key').update(got.body).digest('hex')}`,
    );
    expect(asked).toEqual(['dep-1/rev-9']);
    const body = JSON.parse(got.body) as { build_log: string[] };
    expect(body.build_log).toHaveLength(20);
    expect(body.build_log.at(-1)).toBe('line 30');
  });

  it('a reader that fails or hangs leaves the log out; the event goes anyway', async () => {
    const r = await receiver();
    const failing = createSender([webhook(`${r.url}/hook`, { timeoutMs: 300 })], {
      userAgent: 'converge/test',
      buildLogs: () => new Promise(() => undefined),
    });
    expect((await failing.deliver('ops', EVENT)).outcome).toBe('delivered');
    await failing.close();
    expect(JSON.parse(r.requests[0]!.body)).not.toHaveProperty('build_log');
  });

  it('a receiver that never answers is given up on at its timeout (retry), naming no URL', async () => {
    const r = await receiver(() => 'hang');
    const sender = createSender([webhook(`${r.url}/secret-path-abc`, { timeoutMs: 300 })], {
      userAgent: 'converge/test',
    });
    const started = Date.now();
    const answer = await sender.deliver('ops', EVENT);
    expect(answer).toEqual({ outcome: 'retry', detail: 'no answer within the timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await sender.close();
  });

  it('classifies answers: 2xx delivered, 5xx/429/408 retried, other 4xx refused; a closed port is retried', async () => {
    const statuses = [204, 500, 429, 408, 404, 401];
    const r = await receiver((_req, i) => statuses[i]!);
    const sender = createSender([webhook(`${r.url}/x`)], { userAgent: 'converge/test' });
    const outcomes = [];
    for (let i = 0; i < statuses.length; i++) outcomes.push((await sender.deliver('ops', EVENT)).outcome);
    expect(outcomes).toEqual(['delivered', 'retry', 'retry', 'retry', 'rejected', 'rejected']);
    await r.close();
    const refused = await sender.deliver('ops', EVENT);
    expect(refused.outcome).toBe('retry');
    expect(JSON.stringify(refused)).not.toContain('127.0.0.1');
    await sender.close();
  });

  it('commit status: GitHub shape on the event commit; GitLab shape; skipped without a git commit or a state', async () => {
    const r = await receiver(() => 201);
    const base = {
      events: [],
      timeoutMs: 2_000,
      inFlight: 2,
      backlog: 100,
      env: {},
      token: 'tok',
      repository: 'acme/agents',
    } as const;
    const sender = createSender(
      [
        { ...base, name: 'gh', type: 'commit-status', apiUrl: `${r.url}/api/v3/`, api: 'github' },
        {
          ...base,
          name: 'gl',
          type: 'commit-status',
          apiUrl: `${r.url}/api/v4`,
          api: 'gitlab',
          repository: 'acme/sub/agents',
        },
      ],
      { userAgent: 'converge/test' },
    );
    expect(await sender.deliver('gh', EVENT)).toEqual({ outcome: 'delivered', status: 201 });
    expect(await sender.deliver('gl', EVENT)).toEqual({ outcome: 'delivered', status: 201 });
    expect(
      await sender.deliver('gh', { ...EVENT, manifestVersion: { kind: 'content', id: 'abcdef123456' } }),
    ).toMatchObject({ outcome: 'skipped' });
    expect(await sender.deliver('gh', { ...EVENT, type: 'drift_detected' })).toMatchObject({ outcome: 'skipped' });
    expect(await sender.deliver('nobody', EVENT)).toMatchObject({ outcome: 'skipped' });
    await sender.close();
    expect(r.requests.map((q) => q.path)).toEqual([
      `/api/v3/repos/acme/agents/statuses/${SHA}`,
      `/api/v4/projects/acme%2Fsub%2Fagents/statuses/${SHA}`,
    ]);
    expect(r.requests.map((q) => q.headers.authorization)).toEqual(['Bearer tok', 'Bearer tok']);
    expect(JSON.parse(r.requests[0]!.body)).toEqual({
      state: 'failure',
      context: 'converge/support',
      description: 'support: revision rev-9 ended BUILD_FAILED',
    });
    expect(JSON.parse(r.requests[1]!.body)).toMatchObject({ state: 'failed', name: 'converge/support' });
  });
});
