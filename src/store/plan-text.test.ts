import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PlanTexts } from './plan-text.js';

/** The text as it was kept before the items were cached: the hash of JSON.stringify(plan), a newline, that JSON. */
function stringified(plan: unknown): { hash: string; text: string } {
  const json = JSON.stringify(plan);
  const hash = createHash('sha256').update(json).digest('hex').slice(0, 32);
  return { hash, text: `${hash}\n${json}` };
}

function change(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'Deployment', name, action: 'noop', new_revision: false, fields: [], ...extra };
}

function expectSame(texts: PlanTexts, plan: unknown): void {
  const kept = texts.text(plan)!;
  const expected = stringified(plan);
  expect(kept.hash).toBe(expected.hash);
  expect(kept.text.equals(Buffer.from(expected.text))).toBe(true);
}

describe('PlanTexts', () => {
  it('keeps the bytes and hash of JSON.stringify, keys in their order, values JSON omits left out', () => {
    const texts = new PlanTexts();
    const plan = {
      format_version: '1',
      summary: { noop: 2, update: 1 },
      changes: [
        change('a'),
        change('é — ünïcode 🚀', { reason: 'line\nbreak "quoted" \u2028 \ud800 lone' }),
        change('b', { gone: undefined, wave: 2, fn: () => 1 }),
      ],
      diagnostics: [],
      notes: ['one', undefined, 2, null],
      prune_refused: undefined,
      targets: [],
      z_last: { nested: [{ deep: true }] },
      '10': 'integer keys first',
    };
    expectSame(texts, plan);
    expectSame(texts, plan);
    expectSame(texts, {});
    expectSame(texts, { changes: [] });
    expectSame(texts, { only: undefined });
    expectSame(texts, [change('x'), 'y']);
    expectSame(texts, 'a string');
    expect(texts.text(null)).toBeUndefined();
    expect(texts.text(undefined)).toBeUndefined();
  });

  it("a targeted plan keeps the last one's change objects and adds new ones: the same bytes as stringifying it whole", () => {
    const texts = new PlanTexts();
    const changes = Array.from({ length: 50 }, (_, i) => change(`app-${String(i).padStart(3, '0')}`));
    const first = { format_version: '1', summary: { noop: 50 }, changes, diagnostics: [] };
    expectSame(texts, first);
    const next = [...changes.slice(0, 20), change('app-020', { action: 'update' }), ...changes.slice(21)];
    const second = { ...first, summary: { noop: 49, update: 1 }, changes: next };
    expectSame(texts, second);
    expect(texts.text(second)!.hash).not.toBe(texts.text(first)!.hash);
    expectSame(texts, first);
  });

  it('encodes a class instance or an item with toJSON as JSON.stringify does', () => {
    const texts = new PlanTexts();
    const at = new Date(0);
    expectSame(texts, { at, items: [at, { toJSON: () => 'custom' }, new Map([[1, 2]])] });
    expectSame(texts, new Date(0));
  });

  it('gives the same bytes whatever the plans share: items reordered, repeated, dropped, or in two arrays', () => {
    const texts = new PlanTexts();
    let seed = 11;
    const random = (n: number): number => (seed = (seed * 48271) % 2147483647) % n;
    let changes = Array.from({ length: 40 }, (_, i) => change(`c-${i}`, { reason: i % 3 === 0 ? 'ü ✓' : 'plain' }));
    expectSame(texts, { changes });
    for (let round = 0; round < 60; round++) {
      const next = [...changes];
      const at = random(next.length + 1);
      const move = random(4);
      if (move === 0) next.splice(at, 0, change(`new-${round}`));
      else if (move === 1 && next.length > 1) next.splice(at % next.length, 1);
      else if (move === 2)
        next.splice(at, 0, next[random(next.length)]!); // the same object twice
      else next.reverse();
      changes = next;
      expectSame(texts, { format_version: '1', changes, diagnostics: changes.slice(0, random(5)), notes: ['n'] });
    }
    const shared = change('shared');
    expectSame(texts, { changes: [shared, change('x'), shared], diagnostics: [shared] });
  });
});
