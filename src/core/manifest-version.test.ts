// Manifest versions: how they are shown, and the content id over sorted paths and bytes.
import { describe, expect, it } from 'vitest';
import { ContentHasher, sameVersion, versionLabel } from './manifest-version.js';

function contentId(files: Array<[string, string]>): string {
  const hasher = new ContentHasher();
  for (const [path, text] of files) hasher.add(path, Buffer.from(text));
  return hasher.id();
}

describe('manifest versions', () => {
  it('shows a commit by its short form and a content hash as such', () => {
    expect(versionLabel({ kind: 'git', id: '3f2a9c1e'.padEnd(40, '0') })).toBe('3f2a9c1');
    expect(versionLabel({ kind: 'content', id: '1a2b3c4d5e6f' })).toBe('content 1a2b3c4d5e6f');
    expect(versionLabel({ kind: 'git', id: '23acd65'.padEnd(40, '0'), uncommitted: true })).toBe(
      'uncommitted changes on top of 23acd65',
    );
    expect(sameVersion({ kind: 'git', id: 'abcdef0' }, { kind: 'git', id: 'abcdef0', uncommitted: true })).toBe(true);
    expect(sameVersion({ kind: 'git', id: 'abcdef0' }, { kind: 'git', id: 'abcdef0' })).toBe(true);
    expect(sameVersion({ kind: 'git', id: 'abcdef0' }, { kind: 'content', id: 'abcdef0' })).toBe(false);
    expect(sameVersion(undefined, undefined)).toBe(true);
  });

  it('gives a 12-digit content id that changes with any byte, path or file boundary', () => {
    const base = contentId([
      ['a.yaml', 'x: 1\n'],
      ['b.yaml', 'y: 2\n'],
    ]);
    expect(base).toMatch(/^[0-9a-f]{12}$/);
    expect(
      contentId([
        ['a.yaml', 'x: 1\n'],
        ['b.yaml', 'y: 2\n'],
      ]),
    ).toBe(base);
    expect(
      contentId([
        ['a.yaml', 'x: 1\n'],
        ['b.yaml', 'y: 3\n'],
      ]),
    ).not.toBe(base);
    expect(
      contentId([
        ['a.yaml', 'x: 1\n'],
        ['c.yaml', 'y: 2\n'],
      ]),
    ).not.toBe(base);
    expect(contentId([['a.yaml', 'x: 1\ny: 2\n']])).not.toBe(
      contentId([
        ['a.yaml', 'x: 1\n'],
        ['a.yaml', 'y: 2\n'],
      ]),
    );
    expect(contentId([])).toMatch(/^[0-9a-f]{12}$/);
  });
});
