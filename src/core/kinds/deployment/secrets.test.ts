// The source of a secret in the diff (issue 42, item 6): shown by name when the applied record names another one, never
// for a record without sources, an unchanged source, or a secret written for another reason than a changed value.
import { describe, expect, it } from 'vitest';
import type { AppliedRecord, SecretRef } from '../../model.js';
import { secretHash } from '../../hash.js';
import { declaredSources, diffSecrets } from './secrets.js';

const KEY = 'Deployment/billing';
const DECLARED: SecretRef[] = [
  { name: 'A', from: { env: 'NEW_A' } },
  { name: 'B', from: { file: '/run/secrets/b' } },
  { name: 'C', from: { value: 'a-literal-value-x1' } },
];
const hashes = {
  A: secretHash(KEY, 'A', 'new-a'),
  B: secretHash(KEY, 'B', 'new-b'),
  C: secretHash(KEY, 'C', 'a-literal-value-x1'),
};
const masked = DECLARED.map((s) => ({ name: s.name, value: '********' }));

function record(sources: AppliedRecord['secretSources']): AppliedRecord {
  const old = { A: secretHash(KEY, 'A', 'old-a'), B: secretHash(KEY, 'B', 'old-b'), C: secretHash(KEY, 'C', 'old-c') };
  return { secrets: old, appliedAt: '2026-11-28T00:00:00.000Z', ...(sources ? { secretSources: sources } : {}) };
}

describe('a secret source in the diff', () => {
  it('names each declared source by name, a literal as one (never its value)', () => {
    expect(declaredSources(DECLARED, ['A', 'B', 'C'])).toEqual({
      A: { env: 'NEW_A' },
      B: { file: '/run/secrets/b' },
      C: { literal: true },
    });
    expect(JSON.stringify(declaredSources(DECLARED, ['C']))).not.toContain('a-literal-value-x1');
  });

  it('shows a moved source on a changed secret, nothing for the same source or a record without sources', () => {
    const moved = diffSecrets(
      KEY,
      DECLARED,
      masked,
      hashes,
      record({ A: { env: 'OLD_A' }, B: { env: 'B' }, C: { literal: true } }),
    );
    expect(moved.fields.map((f) => [f.path, f.source])).toEqual([
      ['secrets.A', { before: { env: 'OLD_A' }, after: { env: 'NEW_A' } }],
      ['secrets.B', { before: { env: 'B' }, after: { file: '/run/secrets/b' } }],
      ['secrets.C', undefined],
    ]);
    const older = diffSecrets(KEY, DECLARED, masked, hashes, record(undefined));
    expect(older.fields.map((f) => f.path)).toEqual(['secrets.A', 'secrets.B', 'secrets.C']);
    expect(older.fields.every((f) => f.source === undefined)).toBe(true);
    // no live deployment: every secret is new (before null), and a create shows no source
    expect(
      diffSecrets(KEY, DECLARED, undefined, hashes, record({ A: { env: 'OLD_A' } })).fields.every(
        (f) => f.source === undefined,
      ),
    ).toBe(true);
  });
});
