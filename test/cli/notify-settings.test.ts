// The notifications: list of a config file through resolveSettings: read beside the plain settings, its problems at
// file:line:column, and a file without it has none.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/cli/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'converge-notify-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function settingsOf(text: string) {
  const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return { file, read: () => resolveSettings({ positionals: [], values: { config: file } }, {}) };
}

describe('notifications in the config file', () => {
  it('are read beside the plain settings', () => {
    const { read } = settingsOf('drift: report\nnotifications:\n  - {name: ops, type: webhook, url_env: OPS_URL}\n');
    const settings = read();
    expect(settings.driftPolicy).toBe('report');
    expect(settings.notifications).toMatchObject([{ name: 'ops', type: 'webhook', env: { url: 'OPS_URL' } }]);
  });

  it('a file without the list has none; an empty list is none', () => {
    expect(settingsOf('drift: heal\n').read().notifications).toEqual([]);
    expect(settingsOf('notifications: []\n').read().notifications).toEqual([]);
  });

  it('a problem names the file, line and column; a list that is not a list is said so', () => {
    const bad = settingsOf('resync: 1m\nnotifications:\n  - name: ops\n    type: slack\n    url_env: SLACK_URL\n    events: [rollout_failed, nope]\n');
    expect(bad.read).toThrow(`${bad.file}:6:30: error: notifications[0].events[1]: "nope" is not one of`);
    const scalar = settingsOf('notifications: ops\n');
    expect(scalar.read).toThrow(`${scalar.file}:1:16: error: notifications: expected a list, got a string`);
    const unknown = settingsOf('notification: []\n');
    expect(unknown.read).toThrow('unknown setting "notification"');
  });
});
