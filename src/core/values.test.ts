// declaredKeys: an object's declared keys in the order a list gives, unknown keys after them in sorted order.
import { describe, expect, it } from 'vitest';
import { declaredKeys } from './values.js';

const ORDER = ['min_scale', 'max_scale', 'cpu', 'memory_mb'] as const;

describe('declaredKeys', () => {
  it('orders the declared keys as the list does, whatever order the object has them in', () => {
    expect(declaredKeys({ memory_mb: 2048, cpu: 1, max_scale: 3, min_scale: 1 }, ORDER)).toEqual([
      'min_scale',
      'max_scale',
      'cpu',
      'memory_mb',
    ]);
    expect(declaredKeys({ cpu: 1, min_scale: 1 }, ORDER)).toEqual(['min_scale', 'cpu']);
    expect(declaredKeys({ max_scale: 3 }, ORDER)).toEqual(['max_scale']);
  });

  it('leaves out absent values and puts keys the list does not know last, sorted', () => {
    expect(declaredKeys({ zeta: 1, cpu: null, alpha: 2, max_scale: 3, min_scale: undefined }, ORDER)).toEqual([
      'max_scale',
      'alpha',
      'zeta',
    ]);
    expect(declaredKeys({}, ORDER)).toEqual([]);
    expect(declaredKeys(undefined, ORDER)).toEqual([]);
  });
});
