// The daemon's prune rule with an injected clock: a delete is sent only after its absence held, with the manifests unchanged, for the grace and across two reconciles; confirm mode waits for a person.
import { describe, expect, it } from 'vitest';
import type { PlanChange } from './model.js';
import { deleteCandidates, markPendingDeletes, pruneGrace, type Absence, type PruneGraceInput } from './prune-grace.js';

const GRACE = 60_000;
const KEY = 'Deployment/b';

/** One reconcile at `now` with `manifests`, from the absences remembered before. */
function reconcileAt(now: number, absent: ReadonlyMap<string, Absence>, over: Partial<PruneGraceInput> = {}) {
  return pruneGrace({
    absent,
    candidates: [{ key: KEY, id: 'd-1' }],
    manifests: 'm1',
    now,
    graceMs: GRACE,
    mode: 'auto',
    confirmed: () => false,
    ...over,
  });
}

describe('pruneGrace', () => {
  it('a first sight waits for the grace, and asks for the reconcile that confirms it', () => {
    const first = reconcileAt(1_000, new Map());
    expect(first.due.size).toBe(0);
    expect(first.waiting.get(KEY)).toEqual({ since: 1_000, dueAt: 61_000, confirm: false });
    expect(first.recheckAt).toBe(61_000);
    expect(first.absent.get(KEY)).toEqual({ since: 1_000, manifests: 'm1', seen: 1, id: 'd-1' });
  });

  it('a second reconcile before the grace ends still waits; one at its end sends the delete', () => {
    const first = reconcileAt(1_000, new Map());
    const early = reconcileAt(60_999, first.absent);
    expect(early.due.size).toBe(0);
    expect(early.recheckAt).toBe(61_000);
    const due = reconcileAt(61_000, early.absent);
    expect([...due.due]).toEqual([KEY]);
    expect(due.waiting.size).toBe(0);
    expect(due.recheckAt).toBeUndefined();
  });

  it('one reconcile is never enough, however long ago: a grace that passed unseen (a restart) asks for a second look at once', () => {
    const remembered = new Map([[KEY, { since: 0, manifests: 'm1', seen: 0, id: 'd-1' }]]);
    const late = reconcileAt(10 * GRACE, new Map());
    expect(late.due.size).toBe(0);
    expect(late.recheckAt).toBe(10 * GRACE + GRACE);
    // Remembered in Redis from before a restart, seen once: the next look sends it.
    const restarted = reconcileAt(10 * GRACE, new Map([[KEY, { ...remembered.get(KEY)!, seen: 1 }]]));
    expect([...restarted.due]).toEqual([KEY]);
  });

  it('changed manifests, or another live id, start the grace again', () => {
    const first = reconcileAt(1_000, new Map());
    const edited = reconcileAt(61_000, first.absent, { manifests: 'm2' });
    expect(edited.due.size).toBe(0);
    expect(edited.absent.get(KEY)).toEqual({ since: 61_000, manifests: 'm2', seen: 1, id: 'd-1' });
    const retaken = reconcileAt(61_000, first.absent, { candidates: [{ key: KEY, id: 'd-2' }] });
    expect(retaken.due.size).toBe(0);
    expect(retaken.absent.get(KEY)?.since).toBe(61_000);
  });

  it('declared again (no longer a candidate): forgotten, so a later absence starts from zero', () => {
    const first = reconcileAt(1_000, new Map());
    const back = reconcileAt(2_000, first.absent, { candidates: [] });
    expect(back.absent.size).toBe(0);
    expect(back.recheckAt).toBeUndefined();
    const again = reconcileAt(61_000, back.absent);
    expect(again.due.size).toBe(0);
    expect(again.waiting.get(KEY)?.since).toBe(61_000);
  });

  it('confirm: never due on time; due once a person confirmed it', () => {
    const first = reconcileAt(1_000, new Map(), { mode: 'confirm' });
    expect(first.waiting.get(KEY)).toEqual({ since: 1_000, dueAt: null, confirm: true });
    expect(first.recheckAt).toBeUndefined();
    const later = reconcileAt(100 * GRACE, first.absent, { mode: 'confirm' });
    expect(later.due.size).toBe(0);
    const confirmed = reconcileAt(100 * GRACE, later.absent, { mode: 'confirm', confirmed: (key) => key === KEY });
    expect([...confirmed.due]).toEqual([KEY]);
  });
});

describe('markPendingDeletes', () => {
  it('marks the waiting deletes only, with the reason that says until when', () => {
    const changes: PlanChange[] = [
      {
        kind: 'Deployment',
        name: 'b',
        action: 'delete',
        new_revision: false,
        fields: [],
        reason: 'owned by converge, no longer declared',
        id: 'd-1',
      },
      {
        kind: 'Deployment',
        name: 'c',
        action: 'delete',
        new_revision: false,
        fields: [],
        reason: 'owned by converge, no longer declared',
        id: 'd-2',
      },
    ];
    expect(deleteCandidates(changes)).toEqual([
      { key: 'Deployment/b', id: 'd-1' },
      { key: 'Deployment/c', id: 'd-2' },
    ]);
    const marked = markPendingDeletes(
      changes,
      new Map([['Deployment/b', { since: 0, dueAt: 60_000, confirm: false }]]),
    );
    expect(marked[0]!.pending_delete).toEqual({
      since: '1970-01-01T00:00:00.000Z',
      due: '1970-01-01T00:01:00.000Z',
      confirm: false,
    });
    expect(marked[0]!.reason).toContain('deleted at 1970-01-01T00:01:00.000Z if still undeclared');
    expect(marked[1]).toBe(changes[1]);
  });
});
