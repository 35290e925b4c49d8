// Notifications (issue 23) against real receivers on loopback: a failed build gives one rollout_failed per receiver
// (delivered once after a 500, signed), commit statuses land on the git HEAD of the manifests, a receiver that hangs
// does not hold an edit back, two replicas send one event, and no planted secret shows in a delivery, a log or Redis.
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  REDIS_URL,
  runConverge,
  scanKeys,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { startReceiver, type Receiver } from '../helpers/notify-receivers.js';

// Planted secrets: receiver URLs (the Slack one embeds a token, as Slack's do), the signing secret and the API token.
const HMAC_SECRET = 'planted-hmac-secret-5d1c0e';
const HOOK_PATH = '/hooks/planted-webhook-path-31c4f2';
const SLACK_PATH = '/services/T0/B0/planted-slack-token-77aa19';
const GIT_TOKEN = 'planted-git-token-9e2f6b';
const PLANTED = [HMAC_SECRET, HOOK_PATH, SLACK_PATH, GIT_TOKEN];

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function emulator(buildMs: number): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs, buildFail: /^nt-bad$/ });
  cleanups.push(() => e.close());
  return e;
}

async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(answer);
  cleanups.push(() => r.close());
  return r;
}

function prefix(label: string): string {
  const p = testPrefix(label);
  cleanups.push(() => dropPrefix(p));
  return p;
}

/** A git repository of manifests under apps/, committed; returns the manifest directory, the repository and HEAD. */
async function gitManifests(
  label: string,
  files: Record<string, string>,
): Promise<{ dir: string; repo: string; head: string }> {
  const repo = await tempDir(label);
  cleanups.push(() => rm(repo, { recursive: true, force: true }));
  const dir = join(repo, 'apps');
  await mkdir(dir);
  await writeFiles(dir, files);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=converge-test', '-c', 'user.email=test@example.com', ...args], {
      cwd: repo,
      encoding: 'utf8',
    }).trim();
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'manifests');
  return { dir, repo, head: git('rev-parse', 'HEAD') };
}

async function configFile(repo: string, yaml: string): Promise<string> {
  const path = join(repo, 'converge.yaml');
  await writeFile(path, yaml);
  return path;
}

function metric(text: string, name: string, labels: Record<string, string>): number | undefined {
  return parsePrometheusText(text).find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

function signed(body: string): string {
  return `sha256=${createHmac('sha256', HMAC_SECRET).update(body).digest('hex')}`;
}

/** Every value under the prefix, as text (strings, hashes, lists, sets, sorted sets, streams). */
async function redisText(p: string): Promise<string> {
  const redis = new Redis(REDIS_URL);
  try {
    const out: string[] = [];
    for (const key of await scanKeys(redis, p)) {
      out.push(key);
      const type = await redis.type(key);
      if (type === 'string') out.push(String(await redis.get(key)));
      else if (type === 'hash') out.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === 'list') out.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === 'set') out.push(JSON.stringify(await redis.smembers(key)));
      else if (type === 'zset') out.push(JSON.stringify(await redis.zrange(key, 0, -1)));
      else if (type === 'stream') out.push(JSON.stringify(await redis.xrange(key, '-', '+')));
    }
    return out.join('\n');
  } finally {
    redis.disconnect();
  }
}

async function resyncs(daemon: DaemonHandle, more: number): Promise<void> {
  const count = async (): Promise<number> =>
    ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
  const target = (await count()) + more;
  await until(`${more} more resync reconciles`, async () => (await count()) >= target, 30_000, 100);
}

function eventsOf(r: Receiver, type: string, name?: string): Array<Record<string, unknown>> {
  return r
    .delivered()
    .filter((b) => b.type === type && (name === undefined || (b.resource as { name: string }).name === name));
}

const WEBHOOK_ENV = { OPS_URL: '', OPS_SECRET: HMAC_SECRET };

describe('notifications', () => {
  it('a failed build: one rollout_failed per receiver (after a 500, signed), commit statuses on HEAD, no planted secret anywhere', async () => {
    const e = await emulator(600);
    // The webhook refuses the first rollout_failed with a 500: the retry carries the same delivery id.
    let refused = false;
    const hook = await receiver((req) => {
      if (req.headers['x-converge-event'] === 'rollout_failed' && !refused) {
        refused = true;
        return 500;
      }
      return 200;
    });
    const slack = await receiver();
    const git = await receiver(() => 201);
    const { dir, repo, head } = await gitManifests('notify-fail', {
      'nt-good.yaml': dockerDeploymentYaml('nt-good', { maxScale: 2 }),
      'nt-bad.yaml': dockerDeploymentYaml('nt-bad', { maxScale: 2 }),
    });
    const config = await configFile(
      repo,
      `notifications:
  - name: ops
    type: webhook
    url_env: OPS_URL
    secret_env: OPS_SECRET
  - name: chat
    type: slack
    url_env: SLACK_URL
    events: [rollout_failed, rollout_succeeded]
    resources: ["nt-*"]
  - name: commits
    type: commit-status
    api_url_env: GIT_API_URL
    token_env: GIT_TOKEN
    repository: acme/agents
`,
    );
    const p = prefix('notify-fail');
    const env = {
      ...WEBHOOK_ENV,
      OPS_URL: `${hook.url}${HOOK_PATH}`,
      SLACK_URL: `${slack.url}${SLACK_PATH}`,
      GIT_API_URL: `${git.url}/api/v3`,
      GIT_TOKEN,
    };
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        p,
        '--health-poll',
        '200ms',
        '--resync',
        '1s',
        '--config',
        config,
        '--log-level',
        'debug',
      ],
      env,
    );

    await until('rollout_failed delivered to the webhook', () => eventsOf(hook, 'rollout_failed').length > 0, 30_000);
    await until('rollout_failed and rollout_succeeded delivered to Slack', () => slack.delivered().length >= 2, 30_000);
    const statusOf = (context: string): string[] =>
      git.requests
        .filter((r) => (JSON.parse(r.body) as { context: string }).context === context)
        .map((r) => (JSON.parse(r.body) as { state: string }).state);
    await until(
      'the commit statuses of both rollouts',
      () => statusOf('converge/nt-bad').length >= 2 && statusOf('converge/nt-good').length >= 2,
      30_000,
    );
    // Several more reconciles and polls: nothing is sent again.
    await resyncs(daemon, 3);

    const bad = e.store.allDeployments().find((d) => d.name === 'nt-bad')!;
    const failedAttempts = hook.requests.filter((r) => r.headers['x-converge-event'] === 'rollout_failed');
    expect(failedAttempts.map((r) => r.status)).toEqual([500, 200]);
    expect(failedAttempts[0]!.headers['x-converge-delivery']).toBe(failedAttempts[1]!.headers['x-converge-delivery']);
    expect(failedAttempts[0]!.body).toBe(failedAttempts[1]!.body);
    for (const r of hook.requests) expect(r.headers['x-converge-signature-256']).toBe(signed(r.body));
    const body = JSON.parse(failedAttempts[1]!.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: failedAttempts[1]!.headers['x-converge-delivery'],
      type: 'rollout_failed',
      resource: { kind: 'Deployment', name: 'nt-bad' },
      reason: 'RevisionBuildFailed',
      revision_id: bad.latest_revision_id,
      manifest_version: { kind: 'git', id: head },
    });
    expect(Object.keys(body)).toEqual(
      expect.arrayContaining(['id', 'type', 'resource', 'reason', 'message', 'manifest_version', 'time']),
    );
    // Why it failed: the failed revision's last build log lines, as the daemon read them (the emulator's last line says it).
    expect(body.build_log).toEqual(expect.arrayContaining([expect.stringMatching(/Build failed/)]));
    expect((body.build_log as string[]).length).toBeLessThanOrEqual(20);
    // Exactly one of each per receiver: the webhook heard every event type once per resource and occurrence.
    expect(eventsOf(hook, 'rollout_failed')).toHaveLength(1);
    expect(eventsOf(hook, 'rollout_succeeded', 'nt-good')).toHaveLength(1);
    expect(eventsOf(hook, 'held', 'nt-bad')).toHaveLength(1);
    const ids = hook.delivered().map((b) => b.id);
    expect(new Set(ids).size).toBe(ids.length);
    const slackTexts = slack.delivered().map((b) => String(b.text));
    expect(slackTexts.filter((t) => t.includes('rollout_failed Deployment/nt-bad'))).toHaveLength(1);
    expect(slackTexts.filter((t) => t.includes('rollout_succeeded Deployment/nt-good'))).toHaveLength(1);
    expect(slack.delivered().every((b) => Array.isArray(b.blocks))).toBe(true);
    // Commit statuses: pending when the write was sent, then failure or success, on HEAD of the manifests' repository.
    expect(statusOf('converge/nt-bad')).toEqual(['pending', 'failure']);
    expect(statusOf('converge/nt-good')).toEqual(['pending', 'success']);
    for (const r of git.requests) {
      expect(r.path).toBe(`/api/v3/repos/acme/agents/statuses/${head}`);
      expect(r.headers.authorization).toBe(`Bearer ${GIT_TOKEN}`);
      expect((JSON.parse(r.body) as { description: string }).description.length).toBeLessThanOrEqual(140);
    }
    const metrics = await daemon.metrics();
    expect(
      metric(metrics, 'converge_notifications_total', { receiver: 'ops', type: 'rollout_failed', result: 'retried' }),
    ).toBe(1);
    expect(
      metric(metrics, 'converge_notifications_total', { receiver: 'ops', type: 'rollout_failed', result: 'delivered' }),
    ).toBe(1);
    expect(
      metric(metrics, 'converge_notifications_total', {
        receiver: 'commits',
        type: 'rollout_failed',
        result: 'delivered',
      }),
    ).toBe(1);

    // No planted secret in any delivery's headers or body (but the token in the git API's Authorization header, and
    // each URL's own path, where the request is sent), log, status, metric or Redis key.
    const deliveries = [...hook.requests, ...slack.requests, ...git.requests].map((r) => {
      const { authorization: _auth, ...headers } = r.headers;
      return `${JSON.stringify(headers)}\n${r.body}`;
    });
    const stored = await redisText(p);
    // The scan covers the delivery jobs: their events are there, their receivers by name only.
    expect(stored).toContain(':converge-notify-chat:');
    expect(stored).toMatch(/receiver\\*":\\*"chat/);
    const seen = [
      deliveries.join('\n'),
      daemon.stdout(),
      daemon.stderr(),
      JSON.stringify(await daemon.status()),
      metrics,
      stored,
    ].join('\n');
    for (const secret of PLANTED) expect(seen.includes(secret), secret).toBe(false);
    expect(daemon.lines.some((l) => l.msg === 'notification delivered' && l.receiver === 'chat')).toBe(true);
  }, 90_000);

  it('a receiver that never answers does not hold an edit back: its PATCH lands while the receiver hangs', async () => {
    const e = await emulator(200);
    const hook = await receiver(() => 'hang');
    const { dir, repo } = await gitManifests('notify-hang', {
      'nt-slow.yaml': dockerDeploymentYaml('nt-slow', { maxScale: 2 }),
    });
    const config = await configFile(
      repo,
      `notifications:
  - {name: ops, type: webhook, url_env: OPS_URL, secret_env: OPS_SECRET, timeout: 60s}
`,
    );
    const p = prefix('notify-hang');
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        p,
        '--health-poll',
        '200ms',
        '--resync',
        '30s',
        '--debounce',
        '100ms',
        '--config',
        config,
      ],
      { ...WEBHOOK_ENV, OPS_URL: `${hook.url}${HOOK_PATH}` },
    );
    await until('a delivery hanging at the receiver', () => hook.hanging() > 0, 30_000);
    const id = e.store.allDeployments().find((d) => d.name === 'nt-slow')!.id;
    const mark = e.requestLog.length;
    await writeFiles(dir, { 'nt-slow.yaml': dockerDeploymentYaml('nt-slow', { maxScale: 5 }) });
    await until(
      'the edit PATCHed',
      () => e.requestLog.slice(mark).some((r) => r.method === 'PATCH' && r.path.endsWith(`/${id}`) && r.status === 200),
      20_000,
    );
    expect(hook.hanging()).toBeGreaterThan(0);
    expect(hook.requests.every((r) => r.status === undefined)).toBe(true);
    expect(liveMaxScale(e.store.allDeployments().find((d) => d.name === 'nt-slow'))).toBe(5);
    expect(daemon.alive()).toBe(true);
    // Nor does it hold the stop: SIGTERM ends the daemon cleanly (exit 0, not the safety net's 1) while it still hangs.
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(daemon.lines.some((l) => l.msg === 'stopped')).toBe(true);
    expect(
      daemon.lines.filter((l) => /did not finish before the deadline|did not end before the deadline/.test(l.msg)),
    ).toEqual([]);
  }, 60_000);

  it('two replicas on one Redis: each event is sent once, by the leader', async () => {
    const e = await emulator(400);
    const hook = await receiver();
    const { dir, repo } = await gitManifests('notify-ha', {
      'nt-good.yaml': dockerDeploymentYaml('nt-good', { maxScale: 2 }),
      'nt-bad.yaml': dockerDeploymentYaml('nt-bad', { maxScale: 2 }),
    });
    const config = await configFile(
      repo,
      `notifications:
  - {name: ops, type: webhook, url_env: OPS_URL, secret_env: OPS_SECRET}
`,
    );
    const p = prefix('notify-ha');
    const args = [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      p,
      '--health-poll',
      '200ms',
      '--resync',
      '1s',
      '--lease',
      '2s',
      '--config',
      config,
      '--log-level',
      'debug',
    ];
    const env = { ...WEBHOOK_ENV, OPS_URL: `${hook.url}${HOOK_PATH}` };
    const [one, two] = await Promise.all([
      startDaemon(dir, [...args, '--replica-id', 'one'], env),
      startDaemon(dir, [...args, '--replica-id', 'two'], env),
    ]);
    await until(
      'rollout_failed and rollout_succeeded delivered',
      () => eventsOf(hook, 'rollout_failed').length > 0 && eventsOf(hook, 'rollout_succeeded').length > 0,
      30_000,
    );
    const leader = (await one.status()).lease as { leading: boolean };
    await resyncs(leader.leading ? one : two, 3);
    expect(eventsOf(hook, 'rollout_failed', 'nt-bad')).toHaveLength(1);
    expect(eventsOf(hook, 'rollout_succeeded', 'nt-good')).toHaveLength(1);
    expect(hook.requests).toHaveLength(hook.delivered().length);
    const ids = hook.delivered().map((b) => b.id);
    expect(new Set(ids).size).toBe(ids.length);
    const senders = [one, two].filter((d) => d.lines.some((l) => l.msg === 'notification delivered'));
    expect(senders).toHaveLength(1);
    expect(senders[0]).toBe(leader.leading ? one : two);

    // The leader dies: the other takes over and reads the event log from the cursor the dead one left, past the
    // failed build: nothing is sent again (test/e2e/notify-failover.test.ts kills a leader mid-rollout).
    const [dead, standby] = leader.leading ? [one, two] : [two, one];
    const before = hook.requests.length;
    await dead.kill('SIGKILL');
    await until(
      'the standby leads',
      async () => ((await standby.status()).lease as { leading: boolean }).leading,
      20_000,
    );
    await resyncs(standby, 3);
    expect(standby.lines.some((l) => l.msg === 'notification queued' && l.event === 'rollout_failed')).toBe(false);
    expect(hook.requests.length).toBe(before);
    expect(eventsOf(hook, 'rollout_failed', 'nt-bad')).toHaveLength(1);
  }, 90_000);

  it('bad receivers stop the start with file:line or the variable named; notify test says what each receiver answered', async () => {
    const { dir, repo, head } = await gitManifests('notify-config', {
      'nt-a.yaml': dockerDeploymentYaml('nt-a', { maxScale: 1 }),
    });
    const bad = await configFile(
      repo,
      `notifications:
  - name: ops
    type: webhok
    url_env: OPS_URL
`,
    );
    const run = await runConverge(['run', dir, '--api-url', 'http://127.0.0.1:9', '--config', bad]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `converge run: ${bad}:3:11: error: notifications[0].type: "webhok" is not one of "webhook", "slack", "commit-status"\n`,
    );
    const good = await configFile(
      repo,
      `notifications:
  - {name: ops, type: webhook, url_env: OPS_URL, secret_env: OPS_SECRET}
  - {name: commits, type: commit-status, api_url_env: GIT_API_URL, token_env: GIT_TOKEN, repository: acme/agents}
`,
    );
    const missing = await runConverge(['run', dir, '--api-url', 'http://127.0.0.1:9', '--config', good], {
      OPS_URL: 'http://127.0.0.1:9/x',
      OPS_SECRET: HMAC_SECRET,
      GIT_TOKEN,
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'converge run: notifications: receiver "commits" (commit-status): environment variable GIT_API_URL is not set\n',
    );

    const hook = await receiver();
    const git = await receiver(() => 422);
    const test = await runConverge(['notify', 'test', '--config', good, '--commit', head], {
      OPS_URL: `${hook.url}${HOOK_PATH}`,
      OPS_SECRET: HMAC_SECRET,
      GIT_API_URL: git.url,
      GIT_TOKEN,
    });
    expect(test.stdout).toBe(
      'ops (webhook): delivered (answered 200)\ncommits (commit-status): not delivered: answered 422\n',
    );
    expect(test.code).toBe(1);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]!.headers['x-converge-signature-256']).toBe(signed(hook.requests[0]!.body));
    expect(JSON.parse(hook.requests[0]!.body)).toMatchObject({
      type: 'test',
      resource: { kind: 'Receiver', name: 'ops' },
    });
    expect(git.requests[0]!.path).toBe(`/repos/acme/agents/statuses/${head}`);
    const one = await runConverge(['notify', 'test', 'ops', '--config', good], {
      OPS_URL: `${hook.url}${HOOK_PATH}`,
      OPS_SECRET: HMAC_SECRET,
    });
    expect(one.stdout).toBe('ops (webhook): delivered (answered 200)\n');
    expect(one.code).toBe(0);
    for (const secret of PLANTED)
      expect(`${test.stdout}${test.stderr}${one.stdout}${one.stderr}${missing.stderr}`.includes(secret), secret).toBe(
        false,
      );
  }, 60_000);
});
