// The notifications: list of a config file through resolveSettings: read beside the plain settings, its problems at
// file:line:column, and a file without it has none.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/cli/settings.js';
import { runCapture } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'converge-notify-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function settingsOf(text: string) {
  const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return { file, read: () => resolveSettings({ positionals: [], values: { config: file } }, {}) };
}

describe('notifications in the config file', () => {
  it('are read beside the plain settings', async () => {
    const { read } = settingsOf('drift: report\nnotifications:\n  - {name: ops, type: webhook, url_env: OPS_URL}\n');
    const settings = await read();
    expect(settings.driftPolicy).toBe('report');
    expect(settings.notifications).toMatchObject([{ name: 'ops', type: 'webhook', env: { url: 'OPS_URL' } }]);
  });

  it('a file without the list has none; an empty list is none', async () => {
    expect((await settingsOf('drift: heal\n').read()).notifications).toEqual([]);
    expect((await settingsOf('notifications: []\n').read()).notifications).toEqual([]);
  });

  it('a problem names the file, line and column; a list that is not a list is said so', async () => {
    const bad = settingsOf(
      'resync: 1m\nnotifications:\n  - name: ops\n    type: slack\n    url_env: SLACK_URL\n    events: [rollout_failed, nope]\n',
    );
    await expect(bad.read()).rejects.toThrow(
      `${bad.file}:6:30: error: notifications[0].events[1]: "nope" is not one of`,
    );
    const scalar = settingsOf('notifications: ops\n');
    await expect(scalar.read()).rejects.toThrow(
      `${scalar.file}:1:16: error: notifications: expected a list, got a string`,
    );
    const unknown = settingsOf('notification: []\n');
    await expect(unknown.read()).rejects.toThrow('unknown setting "notification"');
  });
});

describe('receiver URLs at start-up', () => {
  const config = settingsOf(
    'notifications:\n  - {name: ops, type: webhook, url_env: OPS_URL}\n  - {name: chat, type: slack, url_env: CHAT_URL}\n',
  ).file;
  const manifests = mkdtempSync(join(tmpdir(), 'converge-notify-urls-'));
  afterAll(() => rmSync(manifests, { recursive: true, force: true }));

  it.each([
    ['http://[::1', 'is not a URL; give https://HOST/PATH'],
    ['https://%%%', 'is not a URL; give https://HOST/PATH'],
    ['https://user:pa55word@hooks.example.com/x', 'must not carry a user name or password; sign with secret_env'],
  ])('%s: converge run and converge notify test refuse it naming the setting, before anything starts', async (url) => {
    const env = { OPS_URL: url, CHAT_URL: 'https://hooks.slack.example/services/T/B/tok' };
    const run = await runCapture(
      ['run', manifests, '--api-url', 'http://127.0.0.1:9', '--redis-url', 'redis://127.0.0.1:9', '--config', config],
      env,
    );
    const test = await runCapture(['notify', 'test', '--config', config], env);
    for (const result of [run, test]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^converge (run|notify): notifications: receiver "ops" \(webhook\): url_env OPS_URL (is not a URL|must not carry)/,
      );
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).not.toContain('pa55word');
      expect(result.stdout).toBe('');
    }
  });

  it('a Slack URL with credentials is refused with its own advice', async () => {
    const env = {
      OPS_URL: 'https://hooks.example.com/x',
      CHAT_URL: 'https://u:p@hooks.slack.example/services/T/B/tok',
    };
    const test = await runCapture(['notify', 'test', '--config', config], env);
    expect(test.code).toBe(1);
    expect(test.stderr).toContain(
      'notifications: receiver "chat" (slack): url_env CHAT_URL must not carry a user name or password; a Slack webhook URL carries its token in its path',
    );
  });
});
