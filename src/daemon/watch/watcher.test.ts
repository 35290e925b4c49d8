// The watcher's pure parts: which paths count, and the debouncer on fake timers with an injected clock.
// (The watcher on real directories is tested in test/daemon/watcher.test.ts and test/daemon/watcher-changes.test.ts.)
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDebouncer, isRelevantPath, MAX_PATHS, type WatchBurst } from './watcher.js';

describe('isRelevantPath', () => {
  it.each([
    ['a.yaml', true],
    ['apps/b.YML', true],
    ['apps', true],
    ['current', true],
    ['..data', true],
    ['..2026_01_01_00_00_00.123/a.yaml', true],
    ['..data_tmp', true],
    ['.git/index', false],
    ['.hidden.yaml', false],
    ['apps/.a.yaml.swp', false],
    ['a.yaml.swp', false],
    ['a.yaml~', false],
    ['4913', false],
    ['README.md', false],
    ['notes.txt', false],
  ])('%s -> %s', (path, expected) => {
    expect(isRelevantPath(path)).toBe(expected);
  });
});

describe('createDebouncer', () => {
  /** The test's clock: the debouncer's timers are vitest's fake ones, its `now` is this value. */
  let now: number;
  let fired: Array<{ at: number; burst: WatchBurst }>;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    now = 1_000_000;
    fired = [];
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  function advance(ms: number): void {
    now += ms;
    vi.advanceTimersByTime(ms);
  }

  function debouncer(quietMs: number, maxWaitMs: number) {
    return createDebouncer(quietMs, maxWaitMs, (burst) => fired.push({ at: now, burst }));
  }

  it('fires once per burst, after the quiet time', () => {
    const start = now;
    const d = debouncer(60, 10_000);
    for (let i = 0; i < 10; i++) {
      d.poke(`f${i}.yaml`, now);
      advance(10);
    }
    // The last poke was at start + 90: quiet until start + 150.
    advance(49);
    expect(fired).toHaveLength(0);
    advance(1);
    expect(fired).toHaveLength(1);
    expect(fired[0]!.at).toBe(start + 150);
    expect(fired[0]!.burst).toEqual({
      events: 10,
      sample: ['f0.yaml', 'f1.yaml', 'f2.yaml', 'f3.yaml', 'f4.yaml'],
      paths: Array.from({ length: 10 }, (_, i) => `f${i}.yaml`),
      overflow: false,
      firstAt: start,
      lastAt: start + 90,
    });
    advance(10_000);
    expect(fired).toHaveLength(1);
  });

  it('counts a path poked twice once in the sample', () => {
    const d = debouncer(60, 10_000);
    d.poke('a.yaml', now);
    d.poke('a.yaml', now);
    d.poke('b.yaml', now);
    advance(60);
    expect(fired.map((f) => f.burst)).toEqual([
      {
        events: 3,
        sample: ['a.yaml', 'b.yaml'],
        paths: ['a.yaml', 'b.yaml'],
        overflow: false,
        firstAt: now - 60,
        lastAt: now - 60,
      },
    ]);
  });

  it('keeps every path of a burst up to MAX_PATHS, then marks it overflowed (a full reconcile), and starts the next burst empty', () => {
    const d = debouncer(60, 10_000);
    for (let i = 0; i <= MAX_PATHS; i++) d.poke(`f${i}.yaml`, now);
    advance(60);
    d.poke('again.yaml', now);
    advance(60);
    expect(fired.map((f) => [f.burst.paths.length, f.burst.overflow, f.burst.sample.length])).toEqual([
      [MAX_PATHS, true, 5],
      [1, false, 1],
    ]);
    expect(fired[1]!.burst.paths).toEqual(['again.yaml']);
  });

  it('fires at the ceiling when a burst never goes quiet, then starts a new burst', () => {
    const start = now;
    const d = debouncer(80, 200);
    for (let t = 0; t < 450; t += 20) {
      d.poke('a.yaml', now);
      advance(20);
    }
    d.cancel();
    advance(10_000);
    // Pokes every 20 ms, never 80 ms apart: each burst is cut at 200 ms after its first poke.
    expect(fired.map((f) => f.at - start)).toEqual([200, 400]);
    expect(fired.map((f) => [f.burst.firstAt - start, f.burst.lastAt - start, f.burst.events])).toEqual([
      [0, 180, 10],
      [200, 380, 10],
    ]);
  });

  it('drops a pending burst on cancel()', () => {
    const d = debouncer(60, 10_000);
    d.poke('a.yaml', now);
    advance(30);
    d.cancel();
    advance(10_000);
    expect(fired).toHaveLength(0);
    d.poke('b.yaml', now);
    advance(60);
    expect(fired.map((f) => f.burst.sample)).toEqual([['b.yaml']]);
  });
});
