// The listing ahead (src/observe/listing-ahead.ts): it starts the compile threads at the walk's POOL_MIN_FILES-th
// manifest file and never below, and the load of its directory takes its listing and reports what a walk of its own would.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import { POOL_MIN_FILES } from '../../src/observe/compile-threads.js';
import { ListingAhead } from '../../src/observe/listing-ahead.js';
import { loadManifestDir } from '../../src/observe/manifests.js';

const OPTIONS = { allowLiteralSecrets: false };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'converge-ahead-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** `count` manifest files of one deployment each, in folders of 100, and one file that is no manifest. */
function writeManifests(count: number): void {
  for (let i = 0; i < count; i++) {
    const folder = join(dir, `team-${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(folder);
    writeFileSync(
      join(folder, `app-${i}.yaml`),
      `apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  source: internal_template\n`,
    );
  }
  writeFileSync(join(dir, 'README.md'), 'not a manifest\n');
}

/** A listing ahead of `dir` whose thread start only counts how often it was asked for (it starts none). */
function counted(): { ahead: ListingAhead; started: () => number } {
  let starts = 0;
  const ahead = new ListingAhead(dir, () => {
    starts += 1;
    return undefined;
  });
  return { ahead, started: () => starts };
}

describe('ListingAhead', () => {
  it('starts the compile threads once, when the walk has found POOL_MIN_FILES manifest files', async () => {
    writeManifests(POOL_MIN_FILES);
    const { ahead, started } = counted();
    expect((await ahead.listing).files).toHaveLength(POOL_MIN_FILES);
    expect(started()).toBe(1);
    await ahead.close();
  });

  it('closed before its walk reaches POOL_MIN_FILES, it starts none after', async () => {
    writeManifests(POOL_MIN_FILES);
    const { ahead, started } = counted();
    await ahead.close();
    expect((await ahead.listing).files).toHaveLength(POOL_MIN_FILES);
    expect(started()).toBe(0);
  });

  it('starts none for a directory of fewer files', async () => {
    writeManifests(POOL_MIN_FILES - 1);
    const { ahead, started } = counted();
    await ahead.listing;
    expect(started()).toBe(0);
    expect(ahead.threads()).toBeUndefined();
  });

  it('the load of its directory gives what a load that walks it gives; another directory is walked anew', async () => {
    writeManifests(120);
    const ahead = new ListingAhead(dir);
    const taken = await loadManifestDir(dir, { ...OPTIONS, ahead });
    const walked = await loadManifestDir(dir, OPTIONS);
    expect(taken).toEqual(walked);
    expect(taken.resources).toHaveLength(120);
    // A file written after the walk ahead: the load took that walk's listing, which does not hold it.
    writeFileSync(join(dir, 'late.yaml'), 'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: late\n');
    const fromAhead = await loadManifestDir(dir, { ...OPTIONS, ahead });
    expect(fromAhead.files).not.toContain('late.yaml');
    const other = mkdtempSync(join(tmpdir(), 'converge-ahead-other-'));
    try {
      const elsewhere = await loadManifestDir(other, { ...OPTIONS, ahead });
      expect(elsewhere.files).toEqual([]);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('a directory that does not exist is the usage mistake of the load that awaits it, not an unhandled rejection', async () => {
    const missing = join(dir, 'no-such-folder');
    const ahead = new ListingAhead(missing);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(loadManifestDir(missing, { ...OPTIONS, ahead })).rejects.toThrow(UsageError);
  });
});
