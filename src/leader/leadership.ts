// Leader election of the daemon's replicas: take the Redis lease, renew it every third of its time, step down at once when it is lost.
import { performance } from 'node:perf_hooks';
import type { AcquireResult, LeaseHolder } from './lease.js';

/** The lease operations leadership needs (src/leader/lease.ts Lease). */
export interface LeasePort {
  readonly holder: string;
  readonly ttlMs: number;
  tryAcquire(): Promise<AcquireResult>;
  renew(token: number): Promise<boolean>;
  release(token: number): Promise<boolean>;
}

/** A standby tries to take the lease this often (at most; a third of a shorter lease). */
export const STANDBY_POLL_MS = 500;

/**
 * A leader counts its lease as held until this share of the lease time after its last successful acquire or renew
 * began (its own monotonic clock only): a renew that hangs on a frozen Redis stops it before the key can lapse.
 */
const LOCAL_VALIDITY = 0.8;

/** The promise's value, or a rejection when Redis did not answer within `ms` (a frozen Redis must not stall the loop). */
async function answerWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface LeadershipEvents {
  /** This replica took the lease with `token`: start watching, planning and enqueueing. Transitions run one at a time. */
  onLead(token: number): Promise<void>;
  /** This replica lost the lease (`why`): stop watching, planning and enqueueing. Not called by stop(). */
  onStandby(why: string): Promise<void>;
  /** A Redis error while trying or renewing (the loop goes on). */
  onError(error: unknown): void;
}

export interface LeadershipStatus {
  /** This replica's id. */
  replica: string;
  leading: boolean;
  /** The holder as last seen (this replica while it leads), or null when nobody held the lease at the last look. */
  leader: LeaseHolder | null;
  leaseMs: number;
  /** Times this replica took or lost the lease. */
  transitions: { gained: number; lost: number };
}

/**
 * The election loop of one replica. Only Redis' TTL decides who holds the lease; the loop never compares its clock
 * with another host's. token() is the gate every plan and enqueue asks: a fencing token while the lease is held,
 * undefined from the moment it is lost (or may have lapsed unseen).
 */
export class Leadership {
  private readonly lease: LeasePort;
  private readonly events: LeadershipEvents;
  private readonly pollMs: number;
  private held: { token: number; since: string; validUntil: number } | undefined;
  private leader: LeaseHolder | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private transitions = Promise.resolve();
  private readonly counts = { gained: 0, lost: 0 };

  constructor(lease: LeasePort, events: LeadershipEvents, pollMs = STANDBY_POLL_MS) {
    this.lease = lease;
    this.events = events;
    this.pollMs = Math.max(10, Math.min(pollMs, Math.floor(lease.ttlMs / 3)));
  }

  /** Starts the loop: the first try is now. */
  start(): void {
    this.schedule(0);
  }

  /** The fencing token while this replica holds the lease; undefined otherwise. */
  token(): number | undefined {
    if (!this.held || this.stopped) return undefined;
    return performance.now() < this.held.validUntil ? this.held.token : undefined;
  }

  status(): LeadershipStatus {
    const leading = this.token() !== undefined;
    return {
      replica: this.lease.holder,
      leading,
      leader: this.leader,
      leaseMs: this.lease.ttlMs,
      transitions: { ...this.counts },
    };
  }

  /** Waits for the transitions (onLead, onStandby) started so far. */
  transitionsDone(): Promise<void> {
    return this.transitions;
  }

  /**
   * Stops the loop and gives the lease up (compare-and-delete) so a standby takes over at its next try; token() is
   * undefined from the call on. Never calls onStandby (the daemon is stopping anyway).
   */
  async stop(): Promise<boolean> {
    this.stopped = true;
    clearTimeout(this.timer);
    const held = this.held;
    this.held = undefined;
    if (!held) return false;
    return this.lease.release(held.token);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const started = performance.now();
    if (this.held) {
      const held = this.held;
      let renewed = false;
      let why = 'the lease key was gone or held by another replica at renewal';
      try {
        renewed = await answerWithin(this.lease.renew(held.token), Math.floor(this.lease.ttlMs / 3));
      } catch (error) {
        this.events.onError(error);
        why = 'the lease could not be renewed (Redis did not answer)';
      }
      if (this.stopped) return;
      if (renewed && this.held === held) {
        held.validUntil = started + this.lease.ttlMs * LOCAL_VALIDITY;
        this.schedule(Math.floor(this.lease.ttlMs / 3));
        return;
      }
      this.lose(why);
      this.schedule(this.pollMs);
      return;
    }
    try {
      // A try that times out but took the lease is harmless: the key names this replica, which the next try re-takes.
      const result = await answerWithin(this.lease.tryAcquire(), Math.floor(this.lease.ttlMs / 3));
      if (this.stopped) {
        if (result.acquired) await this.lease.release(result.token);
        return;
      }
      if (result.acquired) {
        this.held = {
          token: result.token,
          since: result.since,
          validUntil: started + this.lease.ttlMs * LOCAL_VALIDITY,
        };
        this.leader = { holder: this.lease.holder, token: result.token, since: result.since };
        this.counts.gained += 1;
        const token = result.token;
        this.transitions = this.transitions
          .then(() => this.events.onLead(token))
          .catch((e: unknown) => this.events.onError(e));
        this.schedule(Math.floor(this.lease.ttlMs / 3));
        return;
      }
      this.leader = result.holder ?? null;
    } catch (error) {
      this.events.onError(error);
    }
    this.schedule(this.pollMs);
  }

  private lose(why: string): void {
    this.held = undefined;
    this.leader = null;
    this.counts.lost += 1;
    this.transitions = this.transitions
      .then(() => this.events.onStandby(why))
      .catch((e: unknown) => this.events.onError(e));
  }
}
