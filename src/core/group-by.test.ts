// groupBy: the groups in the order their keys first appear, each in the order given.
import { describe, expect, it } from 'vitest';
import { groupBy } from './group-by.js';

describe('groupBy', () => {
  it('keeps the order of the keys as first seen and of the items within each group', () => {
    const groups = groupBy(['b1', 'a1', 'b2', 'c1', 'a2'], (s) => s[0]);
    expect([...groups]).toEqual([
      ['b', ['b1', 'b2']],
      ['a', ['a1', 'a2']],
      ['c', ['c1']],
    ]);
  });

  it('groups 10,000 items of one key into one array of them all, and an empty list into none', () => {
    const items = Array.from({ length: 10_000 }, (_, i) => i);
    expect(groupBy(items, () => 'one').get('one')).toEqual(items);
    expect(groupBy([], () => 'one').size).toBe(0);
  });
});
