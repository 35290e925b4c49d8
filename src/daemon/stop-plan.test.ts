// The stop's budget: every step bounded, the bounds summing to less than shutdown_timeout, the default's figures.
import { describe, expect, it } from 'vitest';
import { stopPlan } from './stop-plan.js';

describe('stopPlan', () => {
  it('at the default 25 s: work until 18 s, hand back 1 s, close 1 s, the stop over by 20 s, the process by 21 s, the safety net at 22 s', () => {
    expect(stopPlan(25_000)).toEqual({ leaseMs: 1_000, watcherMs: 1_000, workEndsAt: 18_000, handBackMs: 1_000, closeMs: 1_000, stopEndsAt: 20_000, exitMs: 1_000, safetyNetAt: 22_000 });
  });

  it('shrinks every bound in proportion below 25 s, and only lengthens the work window above it', () => {
    expect(stopPlan(5_000)).toEqual({ leaseMs: 200, watcherMs: 200, workEndsAt: 3_600, handBackMs: 200, closeMs: 200, stopEndsAt: 4_000, exitMs: 200, safetyNetAt: 4_400 });
    expect(stopPlan(60_000)).toMatchObject({ leaseMs: 1_000, workEndsAt: 53_000, stopEndsAt: 55_000, safetyNetAt: 57_000 });
    expect(stopPlan(0)).toEqual({ leaseMs: 0, watcherMs: 0, workEndsAt: 0, handBackMs: 0, closeMs: 0, stopEndsAt: 0, exitMs: 0, safetyNetAt: 0 });
  });

  it('orders the steps and keeps every one inside shutdown_timeout, for any setting', () => {
    for (const total of [1, 999, 3_000, 4_000, 12_345, 25_000, 25_001, 90_000, 600_000]) {
      const p = stopPlan(total);
      expect(p.workEndsAt).toBeGreaterThanOrEqual(0);
      expect(p.workEndsAt + p.handBackMs + p.closeMs).toBe(p.stopEndsAt);
      expect(p.stopEndsAt + p.exitMs).toBeLessThanOrEqual(p.safetyNetAt);
      if (total >= 1_000) expect(p.stopEndsAt + p.exitMs).toBeLessThan(p.safetyNetAt);
      expect(p.safetyNetAt).toBeLessThanOrEqual(total);
      expect(p.leaseMs + p.watcherMs).toBeLessThanOrEqual(p.workEndsAt);
    }
  });
});
