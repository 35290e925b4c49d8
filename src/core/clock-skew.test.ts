// When a replica says its clock differs from Redis': once beyond the 5 s bound, again only when the skew moved by another bound, once when back; never for a slow round trip.
import { describe, expect, it } from 'vitest';
import { CLOCK_SKEW_BOUND_MS, skewChange, skewMessage, type SkewNotice } from './clock-skew.js';

/** The logs a series of readings gives, each reading's round trip 2 ms unless given. */
function logsOf(readings: Array<number | [number, number]>): Array<string | undefined> {
  let last: SkewNotice | undefined;
  return readings.map((r) => {
    const [skewMs, roundTripMs] = typeof r === 'number' ? [r, 2] : r;
    const change = skewChange(last, { skewMs, roundTripMs });
    last = change.notice;
    return change.log;
  });
}

describe('skewChange', () => {
  it('a clock 120 s ahead is said at the first reading, not at the readings after', () => {
    expect(logsOf([120_000, 120_010, 119_990, 120_000])).toEqual(['warn', undefined, undefined, undefined]);
  });

  it('a clock within the bound, either way, is never said', () => {
    expect(logsOf([0, 4_000, -4_900, 1_000])).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('said again when it moved by more than the bound since it was said, and once when it is back within', () => {
    expect(logsOf([-30_000, -33_000, -36_000, 200, 300, 7_000])).toEqual([
      'warn',
      undefined,
      'warn',
      'info',
      undefined,
      'warn',
    ]);
  });

  it('a skew that only a slow round trip could explain is not taken for a wrong clock', () => {
    expect(
      logsOf([
        [6_000, 4_000],
        [6_000, 1_000],
      ]),
    ).toEqual([undefined, 'warn']);
    expect(skewChange(undefined, { skewMs: CLOCK_SKEW_BOUND_MS, roundTripMs: 0 }).log).toBeUndefined();
  });

  it('the warning says how far, which way, and that the grace is not shortened', () => {
    expect(skewMessage(120_000)).toContain("this replica's clock is 120.0 s ahead of Redis' clock (more than 5 s)");
    expect(skewMessage(-7_250)).toContain('7.3 s behind');
    expect(skewMessage(120_000)).toContain('none of them is shortened');
  });
});
