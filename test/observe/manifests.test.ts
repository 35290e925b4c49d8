// loadManifestDir over real temporary directories: walking, links, loops, vanishing and odd files.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import { MAX_MANIFEST_BYTES } from '../../src/core/manifest/file-bytes.js';
import { loadManifestDir, readManifestFiles } from '../../src/observe/manifests.js';
import { listManifestFiles } from '../../src/observe/manifest-listing.js';

const OPTIONS = { allowLiteralSecrets: false };

function deployment(name: string): string {
  return `apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: ${name}\nspec:\n  source: internal_template\n`;
}

function lines(result: {
  diagnostics: Array<{ file: string; line: number; column: number; severity: string; code: string; message: string }>;
}): string[] {
  return result.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.severity} ${d.code} ${d.message}`);
}

let dir: string;
/** A folder beside the manifest directory, holding elsewhere.yaml (declares "declared-outside"), for links out of the tree. */
let outside: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'converge-manifests-'));
  outside = mkdtempSync(join(tmpdir(), 'converge-outside-'));
  writeFileSync(join(outside, 'elsewhere.yaml'), deployment('declared-outside'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

function write(path: string, text: string): void {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
}

describe('loadManifestDir', () => {
  it('reads *.yaml and *.yml recursively in sorted order, skipping hidden files and folders and other extensions', async () => {
    write('b.yml', deployment('bee'));
    write('a/z.yaml', deployment('zed'));
    write('a/b/deep.YAML', deployment('deep'));
    write('notes.txt', 'not yaml');
    write('.hidden.yaml', deployment('hidden-file'));
    write('.git/config.yaml', deployment('hidden-folder'));
    write('a/.cache/x.yaml', deployment('hidden-nested'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(result.files).toEqual(['a/b/deep.YAML', 'a/z.yaml', 'b.yml']);
    expect(result.resources.map((r) => `${r.location.file}:${r.name}`)).toEqual([
      'a/b/deep.YAML:deep',
      'a/z.yaml:zed',
      'b.yml:bee',
    ]);
    expect(result.diagnostics).toEqual([]);
  });

  it('throws a UsageError naming a missing directory or a file given as the directory', async () => {
    await expect(loadManifestDir(join(dir, 'nope'), OPTIONS)).rejects.toThrow(
      new UsageError(`manifest directory ${join(dir, 'nope')} does not exist`),
    );
    write('file.yaml', deployment('x'));
    await expect(loadManifestDir(join(dir, 'file.yaml'), OPTIONS)).rejects.toThrow(UsageError);
    await expect(loadManifestDir(join(dir, 'file.yaml'), OPTIONS)).rejects.toThrow(
      'is not a directory; give the folder that holds the manifests',
    );
  });

  it('reads a Kubernetes ConfigMap mount: visible links into ..data are followed, the hidden folders are not walked twice', async () => {
    write('..2024_06_01_10_00_00.123/app.yaml', deployment('from-configmap'));
    write('..2024_06_01_10_00_00.123/providers.yaml', deployment('second'));
    symlinkSync('..2024_06_01_10_00_00.123', join(dir, '..data'));
    symlinkSync('..data/app.yaml', join(dir, 'app.yaml'));
    symlinkSync('..data/providers.yaml', join(dir, 'providers.yaml'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(result.files).toEqual(['app.yaml', 'providers.yaml']);
    expect(result.resources.map((r) => r.name)).toEqual(['from-configmap', 'second']);
    expect(result.diagnostics).toEqual([]);
  });

  it('follows a folder link once and reports a link back to an ancestor as a loop, without hanging', async () => {
    write('team/app.yaml', deployment('app'));
    write('shared/common.yaml', deployment('common'));
    symlinkSync('../shared', join(dir, 'team/linked'));
    symlinkSync('..', join(dir, 'team/back-to-team-parent'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(result.files).toEqual(['shared/common.yaml', 'team/app.yaml']);
    expect(lines(result)).toEqual([
      'team/back-to-team-parent:1:1 warning E_SYMLINK_LOOP leads to ., a folder already read (a symbolic link loop or a second link to it); skipped',
      'team/linked:1:1 warning E_SYMLINK_LOOP leads to shared, a folder already read (a symbolic link loop or a second link to it); skipped',
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['common', 'app']);
  });

  it('does not follow a link whose target lies outside the directory (a folder, a file, /usr/share): a warning names it, nothing there is read', async () => {
    write('in.yaml', deployment('inside'));
    write('team/app.yaml', deployment('app'));
    symlinkSync(outside, join(dir, 'linked-folder'));
    symlinkSync(join(outside, 'elsewhere.yaml'), join(dir, 'team/linked.yaml'));
    symlinkSync('/usr/share', join(dir, 'system'));
    // A link inside the tree that leads out through a second link is judged by where it ends.
    symlinkSync('linked-folder', join(dir, 'via-inner-link'));
    symlinkSync(join(outside, 'notes.txt'), join(dir, 'notes.txt'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(result.files).toEqual(['in.yaml', 'team/app.yaml']);
    expect(result.resources.map((r) => r.name)).toEqual(['inside', 'app']);
    const real = realpathSync(outside);
    expect(lines(result)).toEqual([
      `linked-folder:1:1 warning W_LINK_OUTSIDE symbolic link to ${real}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
      `system:1:1 warning W_LINK_OUTSIDE symbolic link to ${realpathSync('/usr/share')}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
      `team/linked.yaml:1:1 warning W_LINK_OUTSIDE symbolic link to ${join(real, 'elsewhere.yaml')}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
      `via-inner-link:1:1 warning W_LINK_OUTSIDE symbolic link to ${real}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
    ]);
  });

  it('does not follow a file replaced by a link out of the tree between listing and reading', async () => {
    write('app.yaml', deployment('app'));
    write('other.yaml', deployment('other'));
    const listing = await listManifestFiles(dir);
    rmSync(join(dir, 'app.yaml'));
    symlinkSync(join(outside, 'elsewhere.yaml'), join(dir, 'app.yaml'));
    const result = await readManifestFiles(listing, OPTIONS);
    expect(result.resources.map((r) => r.name)).toEqual(['other']);
    expect(lines(result)).toEqual([
      'app.yaml:1:1 error E_FILE_READ file was replaced by a symbolic link since it was listed; not read (it is listed and read again on the next run)',
    ]);
  });

  it('reports a link that resolves to itself and a dangling manifest link as warnings, each a path not read (unknown to prune)', async () => {
    write('ok.yaml', deployment('ok'));
    symlinkSync('self.yaml', join(dir, 'self.yaml'));
    symlinkSync('missing-target.yaml', join(dir, 'dangling.yaml'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(lines(result)).toEqual([
      'dangling.yaml:1:1 warning E_BROKEN_LINK is a symbolic link whose target does not exist (ENOENT): nothing is read from it, and what it declared before is unknown, never deleted; restore its target, or delete the link to remove its resources',
      'self.yaml:1:1 warning E_SYMLINK_LOOP symbolic link loop (the link resolves to itself): nothing is read from it, and what it declared before is unknown, never deleted; restore its target, or delete the link to remove its resources',
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['ok']);
    expect(result.unread).toEqual([
      {
        file: 'dangling.yaml',
        what: 'is a symbolic link whose target does not exist',
        fix: 'restore its target, or delete the link to remove its resources',
      },
      {
        file: 'self.yaml',
        what: 'is a symbolic link that loops',
        fix: 'restore its target, or delete the link to remove its resources',
      },
    ]);
  });

  it('reports a directory named like a manifest as a path not read, and still reads the files in it', async () => {
    write('ok.yaml', deployment('ok'));
    write('b.yaml/inner.yaml', deployment('inner'));
    symlinkSync('b.yaml', join(dir, 'linked.yml'));
    const result = await loadManifestDir(dir, OPTIONS);
    const fix = 'give the folder another name (its files are still read), or put the manifest file back';
    expect(lines(result)).toEqual([
      `b.yaml:1:1 warning W_NOT_A_FILE is a directory, not a manifest file (the manifests in it are read as a folder's): what a manifest file of this name declared before is unknown, never deleted; ${fix}`,
      `linked.yml:1:1 warning W_NOT_A_FILE is a directory, not a manifest file (the manifests in it are read as a folder's): what a manifest file of this name declared before is unknown, never deleted; ${fix}`,
      'linked.yml:1:1 warning E_SYMLINK_LOOP leads to b.yaml, a folder already read (a symbolic link loop or a second link to it); skipped',
    ]);
    expect(result.resources.map((r) => r.name).sort()).toEqual(['inner', 'ok']);
    expect(result.unread).toEqual([
      { file: 'b.yaml', what: 'is a directory', fix },
      { file: 'linked.yml', what: 'is a directory', fix },
    ]);
  });

  it('tolerates a file that vanishes between listing and reading', async () => {
    write('stays.yaml', deployment('stays'));
    write('goes.yaml', deployment('goes'));
    const listing = await listManifestFiles(dir);
    expect(listing.files.map((f) => f.path)).toEqual(['goes.yaml', 'stays.yaml']);
    rmSync(join(dir, 'goes.yaml'));
    const result = await readManifestFiles(listing, OPTIONS);
    expect(result.files).toEqual(['stays.yaml']);
    expect(lines(result)).toEqual([
      'goes.yaml:1:1 warning E_FILE_VANISHED file disappeared while being read; skipped (it is read again on the next run)',
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['stays']);
  });

  it('refuses a huge file by its size, with one diagnostic, and still loads its neighbours', async () => {
    write('huge.yaml', `# ${'x'.repeat(MAX_MANIFEST_BYTES + 10)}\n`);
    write('small.yaml', deployment('small'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(lines(result)).toEqual([
      'huge.yaml:1:1 error E_TOO_LARGE file is larger than 1 MiB; a manifest file must be smaller (split it into several files)',
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['small']);
  });

  it('a 5 MB manifest alone in its directory is one message: no "none declares a resource" warning beside the refusal', async () => {
    write('huge.yaml', `# ${'x'.repeat(5 * 1024 * 1024)}\n`);
    const result = await loadManifestDir(dir, OPTIONS);
    expect(lines(result)).toEqual([
      'huge.yaml:1:1 error E_TOO_LARGE file is larger than 1 MiB; a manifest file must be smaller (split it into several files)',
    ]);
  });

  it('does not block on a FIFO named like a manifest', async () => {
    execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
    write('real.yaml', deployment('real'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(lines(result)).toEqual([
      'pipe.yaml:1:1 warning W_NOT_A_FILE is a named pipe (FIFO), not a regular file: nothing is read from it, and what it declared before is unknown, never deleted; put the manifest file back, or delete this one to remove its resources',
    ]);
    expect(result.resources.map((r) => r.name)).toEqual(['real']);
    expect(result.unread).toEqual([
      {
        file: 'pipe.yaml',
        what: 'is a named pipe (FIFO)',
        fix: 'put the manifest file back, or delete this one to remove its resources',
      },
    ]);
  });

  it.skipIf(process.getuid?.() === 0)(
    'reports an unreadable file (permissions) as a path not read and goes on',
    async () => {
      write('secret.yaml', deployment('hidden'));
      write('open.yaml', deployment('open'));
      chmodSync(join(dir, 'secret.yaml'), 0o000);
      const result = await loadManifestDir(dir, OPTIONS);
      const fix = 'make it readable (check its permissions), or delete it to remove its resources';
      expect(lines(result)).toEqual([
        `secret.yaml:1:1 warning W_FILE_UNREADABLE cannot be read (EACCES): nothing is read from it, and what it declared before is unknown, never deleted; ${fix}`,
      ]);
      expect(result.resources.map((r) => r.name)).toEqual(['open']);
      expect(result.unread).toEqual([{ file: 'secret.yaml', what: 'cannot be read (EACCES)', fix }]);
    },
  );

  it('reports duplicates across folders with paths relative to the directory, forward slashes', async () => {
    write('team-a/agent.yaml', deployment('agent'));
    write('team-b/nested/agent.yaml', deployment('agent'));
    const result = await loadManifestDir(dir, OPTIONS);
    expect(lines(result)).toEqual([
      'team-a/agent.yaml:4:9 error E_DUPLICATE Deployment "agent" is declared 2 times (also at team-b/nested/agent.yaml:4:9); names must be unique across the manifest directory: keep one',
      'team-b/nested/agent.yaml:4:9 error E_DUPLICATE Deployment "agent" is declared 2 times (also at team-a/agent.yaml:4:9); names must be unique across the manifest directory: keep one',
    ]);
    expect(result.blocked.map((b) => b.name)).toEqual(['agent']);
  });

  it('loads the example manifests without a single diagnostic', async () => {
    const examples = new URL('../../examples/manifests/', import.meta.url).pathname;
    const result = await loadManifestDir(examples, OPTIONS);
    expect(result.diagnostics).toEqual([]);
    expect(result.blocked).toEqual([]);
    expect(result.files.length).toBeGreaterThanOrEqual(6);
    expect(result.files.length).toBeLessThanOrEqual(10);
    const sources = new Set(result.resources.flatMap((r) => (r.kind === 'Deployment' ? [r.spec.source] : [])));
    expect([...sources].sort()).toEqual([
      'codehost',
      'external_docker',
      'internal_docker',
      'internal_source',
      'internal_template',
    ]);
    const modes = result.resources.flatMap((r) => (r.kind === 'OAuthProvider' ? [r.spec.mode] : []));
    expect(modes).toEqual(['manual']);
    const mcp = await loadManifestDir(new URL('../../examples/mcp/', import.meta.url).pathname, OPTIONS);
    expect(mcp.diagnostics).toEqual([]);
    expect(mcp.resources.map((r) => (r.kind === 'OAuthProvider' ? r.spec.mode : r.kind))).toEqual(['mcp']);
    expect(result.resources.some((r) => r.suspend)).toBe(true);
  });
});
