// shareStrings (src/observe/compile-batch.ts): a worker's answer takes the strings this thread holds, its values unchanged.
import { describe, expect, it } from 'vitest';
import type { ManifestResult } from '../../src/core/manifest/parse.js';
import { shareStrings } from '../../src/observe/compile-batch.js';

function answer(file: string): ManifestResult {
  const location = { file, line: 1, column: 1 };
  return {
    resources: [],
    blocked: [{ kind: 'Deployment', name: file.slice(0, -5), location, reason: 'held' }],
    diagnostics: [
      { severity: 'warning', file, line: 3, column: 5, code: 'W_DEFAULT_TIER', message: 'tier is not set' },
      { severity: 'error', file: 'other.yaml', line: 1, column: 1, code: 'E_YAML', message: `${file} is broken` },
    ],
  };
}

describe('shareStrings', () => {
  it('leaves every value as it was, and holds each text of a load once', () => {
    const seen = new Map<string, string>();
    const results = ['a.yaml', 'b.yaml'].map((file) => {
      const result = answer(file);
      shareStrings(result, file, seen);
      return result;
    });
    expect(results).toEqual(['a.yaml', 'b.yaml'].map(answer));
    // one warning text and one code shared by both files; each error text is its own
    expect([...seen.keys()].sort()).toEqual(
      ['E_YAML', 'W_DEFAULT_TIER', 'a.yaml is broken', 'b.yaml is broken', 'tier is not set'].sort(),
    );
  });
});
