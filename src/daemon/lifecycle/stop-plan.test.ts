// The stop's budget: every step bounded, the bounds summing to less than shutdown_timeout, the default's figures.
import { describe, expect, it } from 'vitest';
import { stopPlan } from './stop-plan.js';

describe('stopPlan', () => {
  it('at the default 25 s: work until 18 s, hand back 1 s, close 1 s, the stop over by 20 s, the process by 21 s, the safety net at 22 s', () => {
    expect(stopPlan(25_000)).toEqual({
      leaseMs: 1_000,
      watcherMs: 1_000,
      workEndsAt: 18_000,
      handBackMs: 1_000,
      closeMs: 1_000,
      stopEndsAt: 20_000,
      exitMs: 1_000,
      safetyNetAt: 22_000,
    });
  });

  it('shrinks every bound in proportion below 25 s, and only lengthens the work window above it', () => {
    expect(stopPlan(5_000)).toEqual({
      leaseMs: 200,
      watcherMs: 200,
      workEndsAt: 3_150,
      handBackMs: 250,
      closeMs: 250,
      stopEndsAt: 3_650,
      exitMs: 250,
      safetyNetAt: 4_400,
    });
    expect(stopPlan(60_000)).toMatchObject({
      leaseMs: 1_000,
      workEndsAt: 53_000,
      stopEndsAt: 55_000,
      safetyNetAt: 57_000,
    });
  });

  it('gives each step a floor, so a very short setting still lets the active jobs use all of it and the stop end in order', () => {
    // 200 ms: the work window is the whole setting; hand back, close and exit get their floors; the safety net comes
    // 1.45 s after the signal, not 176 ms (a loaded machine would hit that with a stop that is merely slow).
    expect(stopPlan(200)).toEqual({
      leaseMs: 100,
      watcherMs: 100,
      workEndsAt: 200,
      handBackMs: 250,
      closeMs: 250,
      stopEndsAt: 700,
      exitMs: 250,
      safetyNetAt: 1_450,
    });
    expect(stopPlan(0)).toMatchObject({ workEndsAt: 200, safetyNetAt: 1_450 });
  });

  it('orders the steps and keeps every one inside shutdown_timeout, for any setting', () => {
    for (const total of [1, 999, 3_000, 4_000, 12_345, 25_000, 25_001, 90_000, 600_000]) {
      const p = stopPlan(total);
      expect(p.workEndsAt).toBeGreaterThanOrEqual(0);
      expect(p.workEndsAt + p.handBackMs + p.closeMs).toBe(p.stopEndsAt);
      expect(p.stopEndsAt + p.exitMs).toBeLessThanOrEqual(p.safetyNetAt);
      expect(p.stopEndsAt + p.exitMs).toBeLessThan(p.safetyNetAt);
      // Inside shutdown_timeout from 2 s on; below it the floors decide (at most 1.45 s after the signal).
      if (total >= 2_000) expect(p.safetyNetAt).toBeLessThanOrEqual(total);
      else expect(p.safetyNetAt).toBeLessThanOrEqual(1_450);
      expect(p.leaseMs + p.watcherMs).toBeLessThanOrEqual(p.workEndsAt);
    }
  });
});
