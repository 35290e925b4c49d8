// Test-only preload (never imported by src): runs this process's wall clock (Date, Date.now) TEST_CLOCK_SHIFT_MS ahead.
// A test starts a converge child with NODE_OPTIONS="--import <this file>" and TEST_CLOCK_SHIFT_MS in its environment to
// play a replica whose host clock is wrong (test/e2e/clock-skew.test.ts). Timers and monotonic clocks are untouched.
const shift = Number(process.env.TEST_CLOCK_SHIFT_MS ?? '0');

if (Number.isFinite(shift) && shift !== 0) {
  const RealDate = globalThis.Date;
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + shift);
      else super(...args);
    }

    static now() {
      return RealDate.now() + shift;
    }
  }
  globalThis.Date = ShiftedDate;
}
