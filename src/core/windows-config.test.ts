// The windows: list of a config file: read with its defaults, and one file:line:column line per mistake.
import { describe, expect, it } from 'vitest';
import { LineCounter, parseDocument } from 'yaml';
import { windowsFromConfig } from './windows-config.js';

function read(text: string) {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  return () => windowsFromConfig(doc, lines, 'c.yaml');
}

describe('windowsFromConfig', () => {
  it('reads each window with the defaults: timezone UTC, manual false', () => {
    const windows = read(
      'windows:\n  - {kind: deny, schedule: "0 22 * * 5", duration: 60h, timezone: Europe/Berlin, manual: true}\n  - {kind: allow, schedule: "0 8 * * 1-5", duration: 90m}\n',
    )();
    expect(windows).toEqual([
      {
        kind: 'deny',
        schedule: '0 22 * * 5',
        durationMs: 60 * 3_600_000,
        duration: '60h',
        timezone: 'Europe/Berlin',
        manual: true,
      },
      {
        kind: 'allow',
        schedule: '0 8 * * 1-5',
        durationMs: 90 * 60_000,
        duration: '90m',
        timezone: 'UTC',
        manual: false,
      },
    ]);
  });

  it('reads none when the key is absent, null or empty', () => {
    expect(read('drift: heal\n')()).toEqual([]);
    expect(read('windows: null\n')()).toEqual([]);
    expect(read('windows: []\n')()).toEqual([]);
  });

  it('says each mistake at its place: which entry, what, how to fix', () => {
    const bad = read(
      [
        'windows:',
        '  - kind: deny',
        '    schedule: "0 22 * *"',
        '    duration: 2 hours',
        '    timezone: Mars/Olympus',
        '  - kind: block',
        '    schedule: "61 * * * *"',
        '    duration: 1h',
        '    manul: true',
        '',
      ].join('\n'),
    );
    let message = '';
    try {
      bad();
    } catch (error) {
      message = (error as Error).message;
    }
    const lines = message.split('\n');
    expect(lines).toContain(
      'c.yaml:3:15: error: windows[0].schedule: "0 22 * *" has 4 fields; write 5 fields, minute hour day-of-month month day-of-week, e.g. "0 22 * * *" (22:00 every day) or "0 8 * * 1-5"',
    );
    expect(lines).toContain(
      'c.yaml:4:15: error: windows[0].duration: "2 hours" is not a duration; write a number with a unit, e.g. 90m or 2h',
    );
    expect(lines).toContain(
      'c.yaml:5:15: error: windows[0].timezone: "Mars/Olympus" is not a time zone; give an IANA name, e.g. UTC, Europe/Berlin or America/New_York',
    );
    expect(lines.find((l) => l.startsWith('c.yaml:6:11: error: windows[1].kind:'))).toMatch(
      /"deny", "allow"|deny.*allow/,
    );
    expect(
      lines.find((l) => l.startsWith('c.yaml:7:15: error: windows[1].schedule: "61 * * * *" is not a cron schedule (')),
    ).toBeDefined();
    expect(lines).toContain(
      'c.yaml:9:5: error: windows[1].manul: unknown key "manul"; known: kind, schedule, duration, timezone, manual',
    );
    expect(lines).toHaveLength(6);
  });

  it('refuses a list that is not one, and a window too short', () => {
    expect(read('windows: nightly\n')).toThrow('c.yaml:1:10: error: windows: expected a list, got a string');
    expect(read('windows:\n  - {kind: deny, schedule: "* * * * *", duration: 500ms}\n')).toThrow(
      'windows[0].duration: "500ms" is too short; give at least 1s',
    );
    expect(read('windows:\n  - {kind: deny, duration: 1h}\n')).toThrow('windows[0].schedule: is required');
  });
});
