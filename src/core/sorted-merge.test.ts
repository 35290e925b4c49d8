// insertSorted: the same list a sort of both would give, equal entries after those already there.
import { describe, expect, it } from 'vitest';
import { insertSorted } from './sorted-merge.js';

describe('insertSorted', () => {
  it('gives what sorting the whole list again gives', () => {
    const compare = (a: number, b: number): number => a - b;
    for (let seed = 1; seed <= 50; seed++) {
      const random = (n: number): number => (seed * 7919 * (n + 13)) % 101;
      const sorted = Array.from({ length: seed * 3 }, (_, i) => random(i)).sort(compare);
      const added = Array.from({ length: seed % 6 }, (_, i) => random(i + 1000));
      expect(insertSorted(sorted, added, compare)).toEqual([...sorted, ...added].sort(compare));
    }
  });

  it('places an entry that compares equal after those already there, and leaves its input alone', () => {
    const byKey = (a: { k: number }, b: { k: number }): number => a.k - b.k;
    const sorted = [
      { k: 1, v: 'old' },
      { k: 2, v: 'old' },
    ];
    const merged = insertSorted(
      sorted,
      [
        { k: 1, v: 'new' },
        { k: 0, v: 'new' },
      ],
      byKey,
    );
    expect(merged.map((e) => `${e.k}${e.v}`)).toEqual(['0new', '1old', '1new', '2old']);
    expect(sorted).toHaveLength(2);
  });
});
