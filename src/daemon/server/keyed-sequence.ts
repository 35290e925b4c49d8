// A change sequence over keyed entries (the rows of /status, its top-level fields, the runs of its plan): each entry's text is compared with the last one seen (by its hash), a changed entry takes the next number of a shared clock, a gone one leaves a tombstone.
import { textHash } from '../../core/hash.js';

/** Answers the next sequence number; one clock numbers every sequence behind one token (status-view.ts RowSequence). */
export type Clock = () => number;

export class KeyedSequence {
  /** Each entry's text as its hash (src/core/hash.ts textHash): the texts themselves are megabytes at thousands of rows. */
  private readonly entries = new Map<string, { hash: string; seq: number }>();
  private readonly removed = new Map<string, number>();
  private oldest = 0;

  constructor(private readonly maxTombstones = Infinity) {}

  /** Takes the current entries in (key, text): each whose text differs from the last seen takes a number; a key not given is removed. */
  observe(current: Iterable<readonly [string, string]>, clock: Clock): void {
    this.observeHashes(
      [...current].map(([key, text]) => [key, textHash(text)] as const),
      clock,
    );
  }

  /** observe, given each entry's text as its hash (textHash) already. */
  observeHashes(current: Iterable<readonly [string, string]>, clock: Clock): void {
    const seen = new Set<string>();
    for (const [key, hash] of current) {
      seen.add(key);
      if (this.entries.get(key)?.hash === hash) continue;
      this.entries.set(key, { hash, seq: clock() });
      this.removed.delete(key);
    }
    for (const key of this.entries.keys()) {
      if (seen.has(key)) continue;
      this.entries.delete(key);
      this.removed.set(key, clock());
    }
    while (this.removed.size > this.maxTombstones) {
      const [key, at] = this.removed.entries().next().value as [string, number];
      this.removed.delete(key);
      this.oldest = Math.max(this.oldest, at);
    }
  }

  /** The number at which the entry last changed; undefined when it is not held. */
  seqOf(key: string): number | undefined {
    return this.entries.get(key)?.seq;
  }

  /** Keys removed after number `n`. */
  removedSince(n: number): string[] {
    return [...this.removed].filter(([, at]) => at > n).map(([key]) => key);
  }

  /** The oldest number a delta can start from (the tombstones before it were dropped). */
  get floor(): number {
    return this.oldest;
  }
}
