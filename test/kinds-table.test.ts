// The kinds table is the only place kinds differ (docs/architecture.md, "One table of resource kinds"): no source file
// outside the kinds' own folders compares a kind with a kind's name or reads `listed`; every per-kind step goes through the table.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** `kind === 'Deployment'`, `'OAuthProvider' !== kind`, `case 'Deployment':`: a kind compared with a kind's name. */
const KIND_TEST =
  /\bkind\s*[!=]==?\s*['"`](Deployment|OAuthProvider)['"`]|['"`](Deployment|OAuthProvider)['"`]\s*[!=]==?\s*[\w.]*kind\b|\bcase\s+['"`](Deployment|OAuthProvider)['"`]\s*:/;
/** `.listed` read outside the table (src/core/kinds exports inListing and liveOf for what it means). */
const LISTED = /\.listed\b/;

/**
 * The kinds' own folders: the pure table (src/core/kinds), the I/O table (src/sync) and the emulator, which plays the
 * service and so is written per resource. The manifest format (src/core/manifest) asks each kind through its hooks.
 */
const KIND_FOLDERS = ['core/kinds/', 'sync/', 'emulator/'];

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Every line of src/ (outside the kinds' own folders) that tells kinds apart, as `file:line: text`. */
async function kindTests(): Promise<string[]> {
  const found: string[] = [];
  for (const file of await sources(SRC)) {
    const path = relative(SRC, file).split('\\').join('/');
    if (KIND_FOLDERS.some((folder) => path.startsWith(folder))) continue;
    const lines = (await readFile(file, 'utf8')).split('\n');
    lines.forEach((text, i) => {
      if (KIND_TEST.test(text) || LISTED.test(text)) found.push(`src/${path}:${i + 1}: ${text.trim()}`);
    });
  }
  return found;
}

describe('the kinds table', () => {
  it('is the only place kinds differ: no kind comparison and no `listed` outside src/core/kinds, src/sync and src/emulator', async () => {
    expect(await kindTests()).toEqual([]);
  });

  it('the check finds what it looks for', () => {
    for (const line of [
      "if (r.kind === 'Deployment') {",
      "x.kind !== 'OAuthProvider'",
      "'Deployment' === resource.kind",
      "  case 'OAuthProvider':",
      'kindOf(k).listed ? a : b',
    ]) {
      expect(KIND_TEST.test(line) || LISTED.test(line), line).toBe(true);
    }
    expect(KIND_TEST.test("resourceKey('Deployment', name)")).toBe(false);
  });
});
