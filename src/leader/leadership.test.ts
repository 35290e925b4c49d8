// Leader election against a lease held in memory, on fake timers: taking, renewing, losing and releasing the lease.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AcquireResult } from './lease.js';
import { Leadership, type LeasePort } from './leadership.js';

/** One lease key shared by the ports of several replicas; `now` is the fake clock. */
function memoryLease() {
  let key: { holder: string; token: number; until: number } | undefined;
  let counter = 0;
  const live = () => (key && key.until > Date.now() ? key : undefined);
  return {
    /** Makes every call of `holder` hang (a frozen Redis) or throw. */
    fault: new Map<string, 'hang' | 'throw'>(),
    steal(holder: string, ttlMs: number) {
      key = { holder, token: ++counter, until: Date.now() + ttlMs };
    },
    port(holder: string, ttlMs: number): LeasePort & { calls: string[] } {
      const calls: string[] = [];
      const guard = async <T>(name: string, run: () => T): Promise<T> => {
        calls.push(name);
        const fault = this.fault.get(holder);
        if (fault === 'hang') return new Promise<T>(() => undefined);
        if (fault === 'throw') throw new Error('Connection is closed.');
        return run();
      };
      return {
        holder,
        ttlMs,
        calls,
        tryAcquire: () =>
          guard('acquire', (): AcquireResult => {
            const now = live();
            if (now && now.holder !== holder)
              return { acquired: false, holder: { holder: now.holder, token: now.token, since: 'then' } };
            key = { holder, token: ++counter, until: Date.now() + ttlMs };
            return { acquired: true, token: counter, since: new Date().toISOString() };
          }),
        renew: (token) =>
          guard('renew', () => {
            const now = live();
            if (!now || now.holder !== holder || now.token !== token) return false;
            now.until = Date.now() + ttlMs;
            return true;
          }),
        release: (token) =>
          guard('release', () => {
            const now = live();
            if (!now || now.holder !== holder || now.token !== token) return false;
            key = undefined;
            return true;
          }),
      };
    },
  };
}

function replica(lease: ReturnType<typeof memoryLease>, id: string, ttlMs = 3_000) {
  const events: string[] = [];
  const leadership = new Leadership(lease.port(id, ttlMs), {
    onLead: async (token) => void events.push(`lead ${token}`),
    onStandby: async (why) => void events.push(`standby: ${why}`),
    onError: (error) => events.push(`error: ${String(error)}`),
  });
  return { leadership, events };
}

describe('Leadership', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] }));
  afterEach(() => void vi.useRealTimers());

  it('one replica leads; the other takes over within its poll after a release, within the lease time after a crash', async () => {
    const lease = memoryLease();
    const a = replica(lease, 'a');
    const b = replica(lease, 'b');
    a.leadership.start();
    await vi.advanceTimersByTimeAsync(1);
    b.leadership.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(a.leadership.token()).toBe(1);
    expect(b.leadership.token()).toBeUndefined();
    expect(b.leadership.status()).toMatchObject({ replica: 'b', leading: false, leader: { holder: 'a', token: 1 } });
    expect(await a.leadership.stop()).toBe(true);
    await vi.advanceTimersByTimeAsync(500);
    expect(b.leadership.token()).toBe(2);
    // b crashes: its loop stops without releasing; c waits until the key lapses (3 s after b's last renew).
    lease.fault.set('b', 'hang');
    const c = replica(lease, 'c');
    c.leadership.start();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(c.leadership.token()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1_500);
    expect(c.leadership.token()).toBe(3);
    expect(a.events).toEqual(['lead 1']);
    expect(c.events).toEqual(['lead 3']);
  });

  it('a renew that finds another holder, or fails, stops the leader at once; one that hangs, after a third of the lease', async () => {
    const lease = memoryLease();
    const a = replica(lease, 'a');
    a.leadership.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(a.leadership.token()).toBe(1);
    lease.steal('intruder', 60_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(a.leadership.token()).toBeUndefined();
    expect(a.events).toEqual(['lead 1', 'standby: the lease key was gone or held by another replica at renewal']);

    const lease2 = memoryLease();
    const b = replica(lease2, 'b');
    b.leadership.start();
    await vi.advanceTimersByTimeAsync(1);
    lease2.fault.set('b', 'throw');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.leadership.token()).toBeUndefined();
    expect(b.events.at(-1)).toBe('standby: the lease could not be renewed (Redis did not answer)');
    // Redis answers again: b takes the lease back (it is still its own) with a new token.
    lease2.fault.delete('b');
    await vi.advanceTimersByTimeAsync(500);
    expect(b.leadership.token()).toBe(2);

    const lease3 = memoryLease();
    const c = replica(lease3, 'c');
    c.leadership.start();
    await vi.advanceTimersByTimeAsync(1);
    lease3.fault.set('c', 'hang');
    // The renew sent at 1 s hangs; it is given up a third of the lease later: c stands by and keeps trying.
    await vi.advanceTimersByTimeAsync(1_990);
    expect(c.leadership.token()).toBe(1);
    await vi.advanceTimersByTimeAsync(20);
    expect(c.leadership.token()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(c.events).toEqual([
      'lead 1',
      expect.stringMatching(/^error: Error: Redis did not answer within 1000 ms/),
      'standby: the lease could not be renewed (Redis did not answer)',
    ]);
  });

  it('stop() gives up the lease, never calls onStandby, and closes the gate', async () => {
    const lease = memoryLease();
    const a = replica(lease, 'a');
    a.leadership.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(await a.leadership.stop()).toBe(true);
    expect(a.leadership.token()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(a.events).toEqual(['lead 1']);
    expect(await a.leadership.stop()).toBe(false);
  });
});
