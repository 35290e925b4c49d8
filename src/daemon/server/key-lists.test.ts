// Unit tests of the top-level lists of keys by run in a /status delta (keys=delta): what a delta carries after a key
// added or removed, a token too old, a client that does not opt in, and a list that was not one; and that the status
// page's own merge (script-plan.ts, run here in a VM) of those deltas is exactly the lists of a whole answer.
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SCRIPT_PLAN } from './status-page/script-plan.js';
import { KEY_LISTS } from './plan-sequence.js';
import { parseStatusQuery, RowSequence, statusAnswer, type StatusQuery } from './status-view.js';

const KEYS = Array.from({ length: 40 }, (_, i) => `Deployment/app-${String(i).padStart(2, '0')}`);

function doc(
  secretsUnknown: unknown,
  orphans: unknown = ['Deployment/stray-b', 'Deployment/stray-a'],
): Record<string, unknown> {
  return {
    format_version: '1',
    daemon: { pid: 1 },
    secretsUnknown,
    held: [],
    conflicts: [],
    deletesPending: [],
    resources: [],
    orphans,
    plan: null,
  };
}

/** The status page's merge of the lists of keys (script-plan.ts) in a fresh VM context, following answers as the page does. */
function page(): { take(answer: Record<string, unknown>): Record<string, unknown> } {
  const script = runInNewContext(`${SCRIPT_PLAN}\n({ holdKeys, mergedKeys })`) as {
    holdKeys(d: unknown): void;
    mergedKeys(d: unknown): Record<string, unknown> | null;
  };
  const held: Record<string, unknown> = {};
  return {
    take(answer) {
      script.holdKeys(answer);
      for (const name of KEY_LISTS) if (name in answer) held[name] = answer[name];
      if (answer.keysDelta) Object.assign(held, script.mergedKeys(JSON.parse(JSON.stringify(answer.keysDelta))));
      return { ...held };
    },
  };
}

function ask(
  sequence: RowSequence,
  document: Record<string, unknown>,
  since: string,
  extra: Partial<StatusQuery> = { plan: 'delta', keys: 'delta' },
): Record<string, any> {
  // Through JSON, as on the wire.
  return JSON.parse(JSON.stringify(statusAnswer(document, [], { since, ...extra }, sequence))) as Record<string, any>;
}

function token(answer: Record<string, any>): string {
  return (answer.view as { sequence: string }).sequence;
}

function lists(document: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(KEY_LISTS.map((name) => [name, document[name]]));
}

describe('the lists of keys by run in a delta', () => {
  it('a key removed is its key removed and the key after it moved; the page merges it into the whole list', () => {
    const sequence = new RowSequence('e');
    const follower = page();
    const first = ask(sequence, doc(KEYS), '');
    expect(first.secretsUnknown).toEqual(KEYS);
    follower.take(first);
    const fewer = KEYS.filter((key) => key !== 'Deployment/app-10');
    const delta = ask(sequence, doc(fewer), token(first));
    expect(Object.keys(delta)).toEqual(['format_version', 'keysDelta', 'resources', 'view']);
    expect(delta.keysDelta).toEqual({
      secretsUnknown: {
        changed: [{ key: 'Deployment/app-11', after: 'Deployment/app-09', entries: ['Deployment/app-11'] }],
        removed: ['Deployment/app-10'],
      },
    });
    expect(follower.take(delta)).toEqual(lists(doc(fewer)));
    // The last key removed: nothing moved after it.
    const last = ask(sequence, doc(fewer.slice(0, -1)), token(delta));
    expect(last.keysDelta.secretsUnknown).toEqual({ changed: [], removed: ['Deployment/app-39'] });
    expect(follower.take(last)).toEqual(lists(doc(fewer.slice(0, -1))));
    // From the newer token nothing changed: no list at all.
    expect(Object.keys(ask(sequence, doc(fewer.slice(0, -1)), token(last)))).toEqual([
      'format_version',
      'resources',
      'view',
    ]);
  });

  it('a key added is the key and the one after it, in its place; the orphans keep their order exactly', () => {
    const sequence = new RowSequence('e');
    const follower = page();
    const first = ask(sequence, doc(KEYS), '');
    follower.take(first);
    const more = [...KEYS.slice(0, 3), 'Deployment/app-02b', ...KEYS.slice(3), 'Deployment/zz'];
    const orphans = ['Deployment/stray-c', 'Deployment/stray-b', 'Deployment/stray-a'];
    const delta = ask(sequence, doc(more, orphans), token(first));
    expect(delta.keysDelta.secretsUnknown.changed.map((r: { key: string; after: string }) => [r.key, r.after])).toEqual(
      [
        ['Deployment/app-02b', 'Deployment/app-02'],
        ['Deployment/app-03', 'Deployment/app-02b'],
        ['Deployment/zz', 'Deployment/app-39'],
      ],
    );
    expect(delta.keysDelta.secretsUnknown.removed).toEqual([]);
    expect(delta.keysDelta.orphans.changed.map((r: { key: string }) => r.key)).toEqual([
      'Deployment/stray-c',
      'Deployment/stray-b',
    ]);
    expect(follower.take(delta)).toEqual(lists(doc(more, orphans)));
  });

  it('a token too old is the full answer, every list whole', () => {
    const sequence = new RowSequence('e', 1);
    const first = ask(sequence, doc(KEYS), '');
    ask(sequence, doc(KEYS.slice(2)), token(first));
    const old = ask(sequence, doc(KEYS.slice(3)), token(first));
    expect(old.view.delta).toBe(false);
    expect(old.keysDelta).toBeUndefined();
    expect(lists(old)).toEqual(lists(doc(KEYS.slice(3))));
  });

  it('a client without keys=delta gets a changed list whole; a list that was not one comes whole', () => {
    const sequence = new RowSequence('e');
    const first = ask(sequence, doc(KEYS), '');
    const whole = ask(sequence, doc(KEYS.slice(1)), token(first), { plan: 'delta' });
    expect(whole.view.delta).toBe(true);
    expect(Object.keys(whole)).toEqual(['format_version', 'secretsUnknown', 'resources', 'view']);
    expect(whole.secretsUnknown).toEqual(KEYS.slice(1));

    const fresh = new RowSequence('f');
    const follower = page();
    const none = ask(fresh, doc(null), '');
    follower.take(none);
    const filled = ask(fresh, doc(KEYS), token(none));
    expect(filled.view.delta).toBe(true);
    expect(filled.secretsUnknown).toEqual(KEYS);
    expect(filled.keysDelta).toBeUndefined();
    follower.take(filled);
    const next = ask(fresh, doc(KEYS.slice(1)), token(filled));
    expect(next.keysDelta.secretsUnknown.removed).toEqual([KEYS[0]]);
    expect(follower.take(next)).toEqual(lists(doc(KEYS.slice(1))));
  });

  it('keys=delta is read, and any other value is one clear message', () => {
    expect(parseStatusQuery(new URLSearchParams('since=x.3&plan=delta&keys=delta'))).toEqual({
      ok: true,
      query: { since: 'x.3', plan: 'delta', keys: 'delta' },
    });
    expect(parseStatusQuery(new URLSearchParams('keys=whole'))).toEqual({
      ok: false,
      error: expect.stringContaining('keys must be "delta"'),
    });
  });
});
