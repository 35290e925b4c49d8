import { describe, expect, it } from 'vitest';
import { jobWriteOf, liveChanged, undecidedFields } from './write-premise.js';

const field = (path: string) => ({ path, before: 1, after: 2, sensitive: false });

describe('the decided write a job carries', () => {
  it('is the operation and the paths of the decided change, never a value', () => {
    const write = jobWriteOf(
      { op: 'update' },
      {
        fields: [field('a.b'), { path: 'secrets.TOKEN', before: '(sensitive)', after: '(sensitive)', sensitive: true }],
      },
    );
    expect(write).toEqual({ op: 'update', fields: ['a.b', 'secrets.TOKEN'] });
    expect(jobWriteOf({ op: 'rebuild' }, { fields: [] })).toEqual({ op: 'rebuild', fields: [] });
    expect(() => jobWriteOf({ op: 'delete' }, { fields: [] })).toThrow(TypeError);
  });

  it('finds the fields that differ now and did not when the write was decided', () => {
    const write = { op: 'update' as const, fields: ['a', 'b'] };
    expect(undecidedFields(write, { fields: [field('a')] })).toEqual([]);
    expect(undecidedFields(write, { fields: [] })).toEqual([]);
    expect(undecidedFields(write, { fields: [field('b'), field('c'), field('d')] })).toEqual(['c', 'd']);
    expect(undecidedFields({ op: 'rebuild', fields: [] }, { fields: [field('a')] })).toEqual(['a']);
  });

  it('a step that sends nothing says so as a value the runner and apply read', () => {
    expect(liveChanged('the deployment is gone')).toEqual({
      outcome: 'unchanged',
      new_revision: false,
      notRun: 'live_changed',
      message:
        'not written: live state changed since the decision: the deployment is gone; the next reconcile decides again',
    });
  });
});
