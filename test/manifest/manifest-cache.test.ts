// ManifestCache: a reload parses only the files whose bytes changed; deleted files are forgotten; options count.
import { createHash } from 'node:crypto';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeploymentResource } from '../../src/core/model.js';
import { loadManifestDir, ManifestCache } from '../../src/observe/manifests.js';
import type { ManifestResult } from '../../src/core/manifest/parse.js';
import { ContentHasher } from '../../src/core/manifest-version.js';

const manifest = (name: string, maxScale: number, literal = false): string =>
  [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  source: external_docker',
    '  source_config:',
    `    resource_spec: { max_scale: ${maxScale} }`,
    '  source_revision_config:',
    '    image_uri: docker.io/acme/app:1',
    ...(literal ? ['  secrets:', '    - name: KEY', '      value: plain-text'] : []),
    '',
  ].join('\n');

const scale = (r: unknown): unknown =>
  ((r as DeploymentResource).spec.source_config?.resource_spec as { max_scale?: number } | undefined)?.max_scale;

/** A cache and the texts it holds by path, kept together: `set` puts a file's text in both. */
function heldFiles(): { cache: ManifestCache; files: Map<string, string>; set: (path: string, text: string) => void } {
  const cache = new ManifestCache();
  const files = new Map<string, string>();
  const result: ManifestResult = { resources: [], blocked: [], diagnostics: [] };
  const set = (path: string, text: string): void => {
    files.set(path, text);
    cache.set(path, Buffer.from(text), { allowLiteralSecrets: false }, result);
  };
  return { cache, files, set };
}

describe('ManifestCache', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('reuses the results of unchanged files, re-parses changed ones, forgets deleted ones', async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-cache-'));
    await writeFile(join(dir, 'a.yaml'), manifest('a', 1));
    await writeFile(join(dir, 'b.yaml'), manifest('b', 1));
    await writeFile(join(dir, 'c.yaml'), manifest('c', 1));
    const cache = new ManifestCache();
    const first = await loadManifestDir(dir, { allowLiteralSecrets: false, cache });
    expect(cache.size).toBe(3);

    await writeFile(join(dir, 'b.yaml'), manifest('b', 7));
    await unlink(join(dir, 'c.yaml'));
    const second = await loadManifestDir(dir, { allowLiteralSecrets: false, cache });
    expect(second.resources.map((r) => r.name)).toEqual(['a', 'b']);
    // a: the very object of the first load; b: parsed again with its new content
    expect(second.resources[0]).toBe(first.resources[0]);
    expect(second.resources[1]).not.toBe(first.resources[1]);
    expect(scale(second.resources[1])).toBe(7);
    expect(cache.size).toBe(2);

    // The same directory loaded without a cache gives equal results.
    const plain = await loadManifestDir(dir, { allowLiteralSecrets: false });
    expect(plain).toEqual(second);
  });

  it('does not reuse a result parsed under other options', async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-cache-'));
    await writeFile(join(dir, 'a.yaml'), manifest('a', 1, true));
    const cache = new ManifestCache();
    const strict = await loadManifestDir(dir, { allowLiteralSecrets: false, cache });
    expect(strict.resources).toEqual([]);
    expect(strict.diagnostics.map((d) => d.code)).toContain('E_LITERAL_SECRET');
    const allowed = await loadManifestDir(dir, { allowLiteralSecrets: true, cache });
    expect(allowed.resources.map((r) => r.name)).toEqual(['a']);
    expect(allowed.diagnostics).toEqual([]);
  });

  it('an edit that keeps the size is still seen (bytes are compared, not sizes or times)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-cache-'));
    await writeFile(join(dir, 'a.yaml'), manifest('a', 1));
    const cache = new ManifestCache();
    await loadManifestDir(dir, { allowLiteralSecrets: false, cache });
    await writeFile(join(dir, 'a.yaml'), manifest('a', 2));
    const again = await loadManifestDir(dir, { allowLiteralSecrets: false, cache });
    expect(scale(again.resources[0])).toBe(2);
  });

  it('gives the content id of the files held: sha256 over their sorted paths, lengths and bytes, as before any edit', () => {
    // The content id's bytes, stated anew (src/core/manifest-version.ts): it is shown and stored, it must not move.
    const expected = (files: ReadonlyMap<string, string>): string => {
      const hash = createHash('sha256').update('converge-manifests/v1\0');
      const paths = [...files.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const path of paths)
        hash.update(`${path}\0${Buffer.byteLength(files.get(path)!)}\0`).update(files.get(path)!);
      return hash.update(`\0${paths.length}`).digest('hex').slice(0, 12);
    };
    const { cache, files, set } = heldFiles();
    expect(cache.contentId()).toBe(expected(files));
    for (const [path, text] of [
      ['b.yaml', 'b: 1\n'],
      ['a/z.yaml', 'é ✓\n'],
      ['a.yaml', ''],
      ['Z.yaml', 'z'],
    ])
      set(path!, text!);
    expect(cache.contentId()).toBe(expected(files));
    expect(cache.contentId()).toBe(expected(files));
    set('b.yaml', 'b: 22\n'); // an edit: the same paths
    expect(cache.contentId()).toBe(expected(files));
    set('a0.yaml', 'new'); // a path comes
    expect(cache.contentId()).toBe(expected(files));
    files.delete('a/z.yaml'); // a path goes
    cache.retain(new Set(files.keys()));
    expect(cache.contentId()).toBe(expected(files));
    cache.retain(new Set(files.keys()));
    expect(cache.contentId()).toBe(expected(files));
  });

  it('keeps the content id right through rounds of edits, new files and removals, few or many at a time', () => {
    const { cache, files, set } = heldFiles();
    const reference = (): string => {
      const content = new ContentHasher();
      const paths = [...files.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const path of paths) content.add(path, Buffer.from(files.get(path)!));
      return content.id();
    };
    let seed = 7;
    const random = (n: number): number => (seed = (seed * 48271) % 2147483647) % n;
    for (let i = 0; i < 400; i++) set(`app-${String(i).padStart(3, '0')}.yaml`, `n: ${i}\n`);
    expect(cache.contentId()).toBe(reference());
    for (const edits of [1, 2, 3, 10, 256, 257, 400, 1]) {
      for (let e = 0; e < edits; e++) set(`app-${String(random(400)).padStart(3, '0')}.yaml`, 'x'.repeat(random(40)));
      expect(cache.contentId()).toBe(reference());
    }
    set('app-010.yaml', 'x'.repeat(files.get('app-010.yaml')!.length)); // as long as before
    set('app-020.yaml', files.get('app-020.yaml')!.replace(/./, 'y'));
    expect(cache.contentId()).toBe(reference());
    set('app-030.yaml', files.get('app-030.yaml')!.replace(/./, 'z')); // one as long, one longer
    set('app-040.yaml', `${files.get('app-040.yaml')!}longer`);
    expect(cache.contentId()).toBe(reference());
    set('app-000.yaml', 'first');
    set('app-399.yaml', 'last');
    expect(cache.contentId()).toBe(reference());
    set('new.yaml', 'new');
    set('app-001.yaml', 'edited with a new path');
    expect(cache.contentId()).toBe(reference());
    files.delete('app-002.yaml');
    cache.retain(new Set(files.keys()));
    set('app-003.yaml', 'edited after a removal');
    expect(cache.contentId()).toBe(reference());
  });
});
