// Receivers from the config file (file:line:column problems, environment variables), and each receiver kind's request.
import { createHmac } from 'node:crypto';
import { LineCounter, parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { deliveryJobId, eventId, type NotifyEvent } from './events.js';
import {
  commitStatusRequest,
  commitStateOf,
  signature,
  slackBody,
  webhookBody,
  COMMIT_DESCRIPTION_MAX,
} from './payloads.js';
import { globMatches, notificationsFromConfig, receiverWants, resolveReceivers } from './receivers.js';

function config(text: string) {
  const lines = new LineCounter();
  return notificationsFromConfig(parseDocument(text, { lineCounter: lines }), lines, 'converge.yaml');
}

function problem(text: string): string {
  try {
    config(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('no problem reported');
}

const EVENT: NotifyEvent = {
  id: eventId({ kind: 'Deployment', name: 'support-agent' }, 'rollout_failed', 'r2'),
  type: 'rollout_failed',
  resource: { kind: 'Deployment', name: 'support-agent' },
  reason: 'RevisionBuildFailed',
  message: 'revision r2 ended BUILD_FAILED; the active revision stays the last good one',
  revisionId: 'r2',
  revisionStatus: 'BUILD_FAILED',
  manifestVersion: { kind: 'git', id: 'c'.repeat(40) },
  time: '2026-11-26T12:00:00.000Z',
};

describe('receivers from the config file', () => {
  it('reads the issue example, with defaults for events and timeout', () => {
    const receivers = config(`api_url: null
notifications:
  - name: ops
    type: webhook
    url_env: OPS_WEBHOOK_URL
    secret_env: OPS_WEBHOOK_SECRET
    events: [rollout_failed, rollout_succeeded]
    resources: ["support-*"]
  - name: commits
    type: commit-status
    api_url_env: GIT_API_URL
    token_env: GIT_TOKEN
    repository: acme/agents
  - name: chat
    type: slack
    url_env: SLACK_URL
    timeout: 3s
    in_flight: 4
    backlog: 500
`);
    expect(receivers[0]).toEqual({
      name: 'ops',
      type: 'webhook',
      events: ['rollout_failed', 'rollout_succeeded'],
      resources: ['support-*'],
      timeoutMs: 10_000,
      inFlight: 2,
      backlog: 100,
      env: { url: 'OPS_WEBHOOK_URL', secret: 'OPS_WEBHOOK_SECRET' },
    });
    expect(receivers[1]).toMatchObject({
      type: 'commit-status',
      repository: 'acme/agents',
      api: 'github',
      env: { apiUrl: 'GIT_API_URL', token: 'GIT_TOKEN' },
      events: ['write_sent', 'rollout_succeeded', 'rollout_failed', 'write_failed'],
    });
    expect(receivers[2]).toMatchObject({ timeoutMs: 3_000, inFlight: 4, backlog: 500 });
    expect(receivers[2]!.events).toHaveLength(10);
    expect(receivers[2]!.events).not.toContain('write_sent');
  });

  it('reports each problem at its file:line:column', () => {
    expect(
      problem(`notifications:
  - name: ops
    type: webhok
    url_env: X
`),
    ).toBe(
      'converge.yaml:3:11: error: notifications[0].type: "webhok" is not one of "webhook", "slack", "commit-status"',
    );
    expect(
      problem(`notifications:
  - name: ops
    type: webhook
    url: https://example.com/hook
`),
    ).toBe(
      'converge.yaml:2:5: error: notifications[0].url_env: is required\n' +
        'converge.yaml:4:5: error: notifications[0].url: unknown key "url"; URLs and tokens come from the environment: name the variable with url_env; known: name, type, url_env, secret_env, api_url_env, token_env, repository, api, events, resources, timeout, in_flight, backlog',
    );
    expect(
      problem(`notifications:
  - name: ops
    type: webhook
    url_env: https://example.com/hook
`),
    ).toBe(
      'converge.yaml:4:14: error: notifications[0].url_env: must be the name of an environment variable (letters, digits, _), not a value',
    );
    expect(
      problem(`notifications:
  - {name: a, type: slack, url_env: A, events: [rollout_faild]}
`),
    ).toMatch(/^converge\.yaml:2:49: error: notifications\[0\]\.events\[0\]: "rollout_faild" is not one of/);
    expect(
      problem(`notifications:
  - {name: a, type: slack, url_env: A}
  - {name: a, type: slack, url_env: B}
`),
    ).toBe(
      'converge.yaml:3:12: error: notifications[1].name: "a" is used by an earlier receiver; give each a name of its own',
    );
    expect(
      problem(`notifications:
  - {name: a, type: slack, url_env: A, timeout: soon}
`),
    ).toContain('converge.yaml:2:49: error: notifications[0].timeout: timeout: "soon" is not a duration');
  });

  it('bounds each receiver: timeout, in_flight and backlog in range, at most 20 receivers', () => {
    expect(
      problem(`notifications:
  - {name: a, type: slack, url_env: A, timeout: 2m}
`),
    ).toContain('notifications[0].timeout: timeout: "2m" is out of range; give more than 0 and at most 60s');
    expect(
      problem(`notifications:
  - {name: a, type: slack, url_env: A, in_flight: 9, backlog: 0}
`),
    ).toMatch(/notifications\[0\]\.in_flight: .*8[\s\S]*notifications\[0\]\.backlog: .*1/);
    const many = Array.from({ length: 21 }, (_, i) => `  - {name: r${i}, type: slack, url_env: A}`).join('\n');
    expect(problem(`notifications:\n${many}\n`)).toBe(
      'converge.yaml:2:3: error: notifications: must have at most 20 items',
    );
  });

  it('a missing environment variable is one line naming it, never a value', () => {
    const receivers = config(`notifications:
  - {name: ops, type: webhook, url_env: OPS_URL, secret_env: OPS_SECRET}
`);
    expect(() => resolveReceivers(receivers, { OPS_URL: 'https://hooks.example.com/x' })).toThrow(
      /^notifications: receiver "ops" \(webhook\): environment variable OPS_SECRET is not set$/,
    );
    expect(() => resolveReceivers(receivers, { OPS_URL: 'not a url', OPS_SECRET: 's3cr3t-value' })).toThrow(
      'notifications: receiver "ops" (webhook): url_env OPS_URL is not a URL; give https://HOST/PATH',
    );
    expect(resolveReceivers(receivers, { OPS_URL: 'https://hooks.example.com/x', OPS_SECRET: 's' })[0]).toMatchObject({
      url: 'https://hooks.example.com/x',
      secret: 's',
    });
  });

  it.each([
    ['http://[::1', 'url_env OPS_URL is not a URL; give https://HOST/PATH'],
    ['https://%%%', 'url_env OPS_URL is not a URL; give https://HOST/PATH'],
    ['ftp://hooks.example.com/x', 'url_env OPS_URL must use http or https, not ftp://'],
    [
      'https://user:pa55word@hooks.example.com/x',
      'url_env OPS_URL must not carry a user name or password; sign with secret_env',
    ],
    ['https://pa55word@hooks.example.com/x', 'url_env OPS_URL must not carry a user name or password'],
  ])('a receiver URL %s is refused naming the setting, never echoed', (url, message) => {
    const receivers = config(`notifications:
  - {name: ops, type: webhook, url_env: OPS_URL}
  - {name: git, type: commit-status, api_url_env: GIT_API, token_env: GIT_TOKEN, repository: a/b}
`);
    let text = '';
    try {
      resolveReceivers(receivers, { OPS_URL: url, GIT_API: url.replace('OPS', 'GIT'), GIT_TOKEN: 't' });
    } catch (error) {
      text = (error as Error).message;
    }
    expect(text).toContain(`notifications: receiver "ops" (webhook): ${message}`);
    expect(text).toContain('notifications: receiver "git" (commit-status): api_url_env GIT_API');
    expect(text).not.toContain('pa55word');
    expect(text).not.toContain('hooks.example.com');
    expect(text.split('\n')).toHaveLength(2);
  });

  it('filters by event type and name globs; daemon-wide events pass the globs', () => {
    const r = { events: ['rollout_failed', 'applied_state_lost'] as const, resources: ['support-*', 'bot-?'] };
    expect(receiverWants(r, EVENT)).toBe(true);
    expect(receiverWants(r, { ...EVENT, resource: { kind: 'Deployment', name: 'billing' } })).toBe(false);
    expect(receiverWants(r, { ...EVENT, type: 'drift_detected' })).toBe(false);
    expect(receiverWants(r, { type: 'applied_state_lost', resource: { kind: 'Daemon', name: 'applied-state' } })).toBe(
      true,
    );
    expect(globMatches('bot-?', 'bot-1')).toBe(true);
    expect(globMatches('bot-?', 'bot-12')).toBe(false);
    expect(globMatches('a.b*', 'axb')).toBe(false);
  });
});

describe('requests', () => {
  it('webhook: the documented body, signed with HMAC-SHA256 of the exact body', () => {
    const body = webhookBody(EVENT, ['step 3/5', 'error: exit 1']);
    expect(JSON.parse(body)).toEqual({
      id: EVENT.id,
      type: 'rollout_failed',
      resource: { kind: 'Deployment', name: 'support-agent' },
      reason: 'RevisionBuildFailed',
      message: EVENT.message,
      revision_id: 'r2',
      revision_status: 'BUILD_FAILED',
      manifest_version: { kind: 'git', id: 'c'.repeat(40) },
      build_log: ['step 3/5', 'error: exit 1'],
      time: EVENT.time,
    });
    expect(signature(body, 'k')).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
    expect(JSON.parse(webhookBody({ ...EVENT, revisionId: undefined, manifestVersion: null }))).not.toHaveProperty(
      'revision_id',
    );
  });

  it('slack: text and blocks, names escaped', () => {
    const body = JSON.parse(slackBody({ ...EVENT, message: 'a <b> & c' }, ['x'])) as {
      text: string;
      blocks: Array<{ type: string }>;
    };
    expect(body.text).toContain('rollout_failed Deployment/support-agent');
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context', 'section', 'context']);
    expect(JSON.stringify(body.blocks[1])).toContain('a &lt;b&gt; &amp; c');
    expect(JSON.stringify(body.blocks[2])).toContain(`*manifests* ${'c'.repeat(7)}"`);
  });

  it('names edits not committed: the webhook marks the version, Slack says it (issue 42, item 5)', () => {
    const dirty = {
      ...EVENT,
      manifestVersion: { kind: 'git' as const, id: 'c'.repeat(40), uncommitted: true as const },
    };
    expect(JSON.parse(webhookBody(dirty)).manifest_version).toEqual({
      kind: 'git',
      id: 'c'.repeat(40),
      uncommitted: true,
    });
    const slack = JSON.parse(slackBody(dirty)) as { blocks: unknown[] };
    expect(JSON.stringify(slack.blocks[2])).toContain(`*manifests* uncommitted changes on top of ${'c'.repeat(7)}"`);
  });

  it('commit status: GitHub/Gitea path and body, GitLab shape, description at most 140 characters', () => {
    const sha = 'c'.repeat(40);
    const github = commitStatusRequest({ ...EVENT, message: 'x'.repeat(300) }, 'acme/agents', 'github', sha, 'failure');
    expect(github.path).toBe(`/repos/acme/agents/statuses/${sha}`);
    const body = JSON.parse(github.body) as { state: string; context: string; description: string };
    expect(body).toMatchObject({ state: 'failure', context: 'converge/support-agent' });
    expect(body.description.length).toBe(COMMIT_DESCRIPTION_MAX);
    const gitlab = commitStatusRequest(EVENT, 'group/sub/project', 'gitlab', sha, 'failure');
    expect(gitlab.path).toBe(`/projects/group%2Fsub%2Fproject/statuses/${sha}`);
    expect(JSON.parse(gitlab.body)).toMatchObject({ state: 'failed', name: 'converge/support-agent' });
    expect(commitStateOf({ type: 'write_sent', rollout: true })).toBe('pending');
    expect(commitStateOf({ type: 'write_sent', rollout: false })).toBe('success');
    expect(commitStateOf({ type: 'rollout_succeeded' })).toBe('success');
    expect(commitStateOf({ type: 'drift_detected' })).toBeUndefined();
  });

  it('delivery ids: the same event gives the same id; one job per receiver, without a colon', () => {
    expect(eventId({ kind: 'Deployment', name: 'a' }, 'rollout_failed', 'r2')).toBe(
      eventId({ kind: 'Deployment', name: 'a' }, 'rollout_failed', 'r2'),
    );
    expect(eventId({ kind: 'Deployment', name: 'a' }, 'rollout_failed', 'r2')).not.toBe(
      eventId({ kind: 'Deployment', name: 'a' }, 'rollout_failed', 'r3'),
    );
    expect(deliveryJobId(EVENT, 'ops')).not.toBe(deliveryJobId(EVENT, 'chat'));
    expect(deliveryJobId(EVENT, 'ops')).not.toContain(':');
  });
});
