// Change windows, the pure half: open or not at an instant, Argo CD's rules of deny and allow, manual writes, when a block ends, time zones and DST.
import { describe, expect, it } from 'vitest';
import { windowEnd, windowHeldMessage, windowVerdict, type ChangeWindow } from './windows.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

function win(
  kind: ChangeWindow['kind'],
  schedule: string,
  durationMs: number,
  extra: Partial<ChangeWindow> = {},
): ChangeWindow {
  return { kind, schedule, durationMs, duration: `${durationMs / MIN}m`, timezone: 'UTC', manual: false, ...extra };
}

const at = (iso: string): number => new Date(iso).getTime();

describe('windowEnd', () => {
  const nightly = win('deny', '0 22 * * *', 2 * HOUR);

  it('is open from its start, inclusive, to start + duration, exclusive', () => {
    expect(windowEnd(nightly, at('2026-05-04T21:59:59.999Z'))).toBeNull();
    expect(windowEnd(nightly, at('2026-05-04T22:00:00Z'))).toBe(at('2026-05-05T00:00:00Z'));
    expect(windowEnd(nightly, at('2026-05-04T23:59:59.999Z'))).toBe(at('2026-05-05T00:00:00Z'));
    expect(windowEnd(nightly, at('2026-05-05T00:00:00Z'))).toBeNull();
  });

  it('joins spans that overlap or touch into one window', () => {
    // Every hour for 90 minutes from 08:00 to 10:00: open 08:00 to 11:30.
    const overlapping = win('deny', '0 8-10 * * *', 90 * MIN);
    expect(windowEnd(overlapping, at('2026-05-04T08:10:00Z'))).toBe(at('2026-05-04T11:30:00Z'));
    // Every 30 minutes for 30 minutes: touching spans, open the whole day; no end within the look-ahead of 64 spans.
    expect(windowEnd(win('deny', '*/30 * * * *', 30 * MIN), at('2026-05-04T08:10:00Z'))).toBeUndefined();
  });

  it('reads the schedule in its time zone', () => {
    const berlin = win('deny', '0 22 * * *', HOUR, { timezone: 'Europe/Berlin' });
    // 22:00 in Berlin in May is 20:00 UTC (CEST, UTC+2).
    expect(windowEnd(berlin, at('2026-05-04T20:30:00Z'))).toBe(at('2026-05-04T21:00:00Z'));
    expect(windowEnd(berlin, at('2026-05-04T22:30:00Z'))).toBeNull();
    // In January (CET, UTC+1) it is 21:00 UTC.
    expect(windowEnd(berlin, at('2026-01-05T21:30:00Z'))).toBe(at('2026-01-05T22:00:00Z'));
  });

  it('keeps its length in real time across a DST change', () => {
    // Berlin springs forward on 2026-03-29 at 02:00 (to 03:00): a window from 01:00 for 3h ends at 05:00 local, 03:00 UTC.
    const early = win('deny', '0 1 * * *', 3 * HOUR, { timezone: 'Europe/Berlin' });
    expect(windowEnd(early, at('2026-03-29T00:30:00Z'))).toBe(at('2026-03-29T03:00:00Z'));
    // A start in the hour that does not exist (02:30) opens at 03:30 local (01:30 UTC) that day.
    const gap = win('deny', '30 2 * * *', HOUR, { timezone: 'Europe/Berlin' });
    expect(windowEnd(gap, at('2026-03-29T01:45:00Z'))).toBe(at('2026-03-29T02:30:00Z'));
    expect(windowEnd(gap, at('2026-03-29T00:45:00Z'))).toBeNull();
    // Berlin falls back on 2026-10-25 at 03:00 (to 02:00): 02:30 happens twice; the window opens at the first.
    expect(windowEnd(gap, at('2026-10-25T00:40:00Z'))).toBe(at('2026-10-25T01:30:00Z'));
    // New York springs forward on 2026-03-08: 00:00 EST for 4h ends at 05:00 EDT (09:00 UTC), 4 real hours.
    const ny = win('deny', '0 0 * * *', 4 * HOUR, { timezone: 'America/New_York' });
    expect(windowEnd(ny, at('2026-03-08T06:00:00Z'))).toBe(at('2026-03-08T09:00:00Z'));
  });
});

describe('windowVerdict: Argo CD rules', () => {
  const deny = win('deny', '0 22 * * *', 2 * HOUR);
  const inDeny = at('2026-05-04T22:30:00Z');
  const outside = at('2026-05-04T12:00:00Z');

  it('blocks nothing without windows', () => {
    expect(windowVerdict([], outside)).toEqual({ blocked: false, manualAllowed: true });
  });

  it('blocks inside a deny window until it ends, and not outside it; names the next change', () => {
    const inside = windowVerdict([deny], inDeny);
    expect(inside).toMatchObject({ blocked: true, manualAllowed: false, by: { index: 0, why: 'deny' } });
    expect(inside.until).toEqual(new Date('2026-05-05T00:00:00Z'));
    expect(inside.nextChange).toEqual(new Date('2026-05-05T00:00:00Z'));
    const out = windowVerdict([deny], outside);
    expect(out).toMatchObject({ blocked: false, manualAllowed: true });
    expect(out.nextChange).toEqual(new Date('2026-05-04T22:00:00Z'));
  });

  it('blocks outside every allow window, and not inside one; until is when the first allow window opens', () => {
    const morning = win('allow', '0 8 * * 1-5', 4 * HOUR);
    const evening = win('allow', '0 18 * * 1-5', HOUR);
    const verdict = windowVerdict([morning, evening], at('2026-05-04T13:00:00Z'));
    expect(verdict).toMatchObject({ blocked: true, manualAllowed: false, by: { index: 1, why: 'outside-allow' } });
    expect(verdict.until).toEqual(new Date('2026-05-04T18:00:00Z'));
    expect(windowVerdict([morning, evening], at('2026-05-04T09:00:00Z')).blocked).toBe(false);
    // Friday evening to Monday morning: the weekend passes before the next allow window.
    expect(windowVerdict([morning, evening], at('2026-05-08T20:00:00Z')).until).toEqual(
      new Date('2026-05-11T08:00:00Z'),
    );
  });

  it('lets deny win over an open allow window', () => {
    const allowAllDay = win('allow', '0 0 * * *', 24 * HOUR, { manual: true });
    const verdict = windowVerdict([allowAllDay, deny], inDeny);
    expect(verdict).toMatchObject({ blocked: true, manualAllowed: false, by: { index: 1, why: 'deny' } });
  });

  it('allows a manual write only if every open deny window says manual', () => {
    const manualDeny = win('deny', '0 22 * * *', 2 * HOUR, { manual: true });
    expect(windowVerdict([manualDeny], inDeny).manualAllowed).toBe(true);
    const strictDeny = win('deny', '0 23 * * *', HOUR);
    expect(windowVerdict([manualDeny, strictDeny], at('2026-05-04T23:10:00Z'))).toMatchObject({
      blocked: true,
      manualAllowed: false,
      by: { index: 0 },
    });
    // Before the strict one opens, only the manual one is open.
    expect(windowVerdict([manualDeny, strictDeny], at('2026-05-04T22:10:00Z')).manualAllowed).toBe(true);
  });

  it('outside the allow windows, allows a manual write if one of them says manual (as Argo CD)', () => {
    const a = win('allow', '0 8 * * *', HOUR);
    const b = win('allow', '0 18 * * *', HOUR, { manual: true });
    expect(windowVerdict([a, b], at('2026-05-04T12:00:00Z')).manualAllowed).toBe(true);
    expect(windowVerdict([a], at('2026-05-04T12:00:00Z')).manualAllowed).toBe(false);
  });

  it('walks overlapping windows to the first instant writes may go', () => {
    // Deny 22:00-00:00, then a second deny 23:30-01:00: writes wait until 01:00.
    const later = win('deny', '30 23 * * *', 90 * MIN);
    expect(windowVerdict([deny, later], inDeny).until).toEqual(new Date('2026-05-05T01:00:00Z'));
    // A deny window that ends inside a closed allow period waits for the allow window.
    const allow = win('allow', '0 2 * * *', HOUR);
    expect(windowVerdict([deny, allow], inDeny).until).toEqual(new Date('2026-05-05T02:00:00Z'));
  });

  it('says no end when the windows never leave a gap within the look-ahead', () => {
    const always = win('deny', '* * * * *', 2 * MIN);
    const verdict = windowVerdict([always], outside);
    expect(verdict.blocked).toBe(true);
    expect(verdict.until).toBeUndefined();
    expect(windowHeldMessage(verdict)).toContain('with no end in sight');
  });
});

describe('windowHeldMessage', () => {
  it('names the window, its end and the way to write now', () => {
    const deny = win('deny', '0 22 * * *', 2 * HOUR, { duration: '2h', timezone: 'Europe/Berlin' });
    const verdict = windowVerdict([deny], at('2026-05-04T20:30:00Z'));
    expect(windowHeldMessage(verdict)).toBe(
      'automatic writes wait: deny window windows[0] (deny "0 22 * * *" for 2h, Europe/Berlin) is open until 2026-05-04T22:00:00.000Z; they are written when it ends, or "converge reconcile --override-window" writes now',
    );
    const manual = windowVerdict([{ ...deny, manual: true }], at('2026-05-04T20:30:00Z'));
    expect(windowHeldMessage(manual, 'converge apply')).toContain(
      '"converge apply" writes now (the window allows manual writes)',
    );
    expect(windowHeldMessage(windowVerdict([deny], at('2026-05-04T12:00:00Z')))).toBeUndefined();
  });

  it('says when the next allow window opens', () => {
    const allow = win('allow', '0 8 * * *', HOUR, { duration: '1h' });
    expect(windowHeldMessage(windowVerdict([allow], at('2026-05-04T12:00:00Z')))).toContain(
      'outside every allow window (the next, windows[0] (allow "0 8 * * *" for 1h, UTC), opens) until 2026-05-05T08:00:00.000Z',
    );
  });
});
