// The windows: list of a config file through resolveSettings and a command: read beside the plain settings, and a
// mistake is one line at file:line:column, exit 1, no stack trace.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/cli/settings.js';
import { runCapture } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'converge-windows-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configOf(text: string): string {
  const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

describe('windows in the config file', () => {
  it('are read beside the plain settings; none by default', async () => {
    const file = configOf(
      'drift: report\nwindows:\n  - {kind: allow, schedule: "0 8 * * 1-5", duration: 10h, timezone: Europe/Berlin}\n',
    );
    const settings = await resolveSettings({ positionals: [], values: { config: file } }, {});
    expect(settings.driftPolicy).toBe('report');
    expect(settings.windows).toEqual([
      {
        kind: 'allow',
        schedule: '0 8 * * 1-5',
        durationMs: 36_000_000,
        duration: '10h',
        timezone: 'Europe/Berlin',
        manual: false,
      },
    ]);
    expect((await resolveSettings({ positionals: [], values: {} }, {})).windows).toEqual([]);
  });

  it('a bad window stops a command with one line naming the entry, the mistake and the fix; exit 1', async () => {
    const file = configOf(
      'windows:\n  - kind: deny\n    schedule: "0 22 * * *"\n    duration: 2h\n    timezone: Europe/Berlinn\n',
    );
    const run = await runCapture(['plan', dir, '--config', file, '--api-url', 'http://127.0.0.1:9']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `converge plan: ${file}:5:15: error: windows[0].timezone: "Europe/Berlinn" is not a time zone; give an IANA name, e.g. UTC, Europe/Berlin or America/New_York\n`,
    );
  });
});
