// The kinds table is the only place kinds differ (docs/architecture.md, "One table of resource kinds"): no source file
// outside src/core/kinds compares a kind with a kind's name or reads `listed`; every per-kind step goes through the table.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** `kind === 'Deployment'`, `'OAuthProvider' !== kind`, …: a kind compared with a kind's name. */
const KIND_TEST = /\bkind\s*[!=]==?\s*['"`](Deployment|OAuthProvider)['"`]|['"`](Deployment|OAuthProvider)['"`]\s*[!=]==?\s*[\w.]*kind\b/;
/** `.listed` read outside the table (src/core/kinds exports inListing and liveOf for what it means). */
const LISTED = /\.listed\b/;

/**
 * The manifest format itself: these files read the `kind` of a manifest document as the format defines it (the zod
 * schemas with their `kind` literals; the raw document before validation: literal-secret checks and the hints of
 * unknown keys; the warnings of a validated document). They are about the file format, not about a kind's behaviour.
 */
const MANIFEST_FORMAT = new Set(['core/manifest/schema.ts', 'core/manifest/parse.ts', 'core/manifest/issues.ts', 'core/manifest/warnings.ts', 'core/wire/schema.ts']);

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')).map((e) => join(e.parentPath, e.name));
}

/** Every line of src/ (outside the table and the manifest format) that tells kinds apart, as `file:line: text`. */
async function kindTests(): Promise<string[]> {
  const found: string[] = [];
  for (const file of await sources(SRC)) {
    const path = relative(SRC, file).split('\\').join('/');
    if (path.startsWith('core/kinds/') || MANIFEST_FORMAT.has(path)) continue;
    const lines = (await readFile(file, 'utf8')).split('\n');
    lines.forEach((text, i) => {
      if (KIND_TEST.test(text) || LISTED.test(text)) found.push(`src/${path}:${i + 1}: ${text.trim()}`);
    });
  }
  return found;
}

describe('the kinds table', () => {
  it('is the only place kinds differ: no kind comparison and no `listed` outside src/core/kinds', async () => {
    expect(await kindTests()).toEqual([]);
  });

  it('the check finds what it looks for', () => {
    for (const line of ["if (r.kind === 'Deployment') {", "x.kind !== 'OAuthProvider'", "'Deployment' === resource.kind", 'kindOf(k).listed ? a : b']) {
      expect(KIND_TEST.test(line) || LISTED.test(line), line).toBe(true);
    }
    expect(KIND_TEST.test("resourceKey('Deployment', name)")).toBe(false);
  });
});
