// Last good version stays in force: real manifest files loaded by the real loader, then broken, fixed, moved, deleted.
import { mkdtemp, rm, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { LastGoodManifests } from '../../src/daemon/cycle/last-good.js';
import { internalDockerYaml as deployment } from '../helpers/manifests.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'converge-lastgood-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function load() {
  return loadManifestDir(dir, { allowLiteralSecrets: false });
}

describe('LastGoodManifests', () => {
  it('holds the resources of a file that stops parsing at their last good version, and releases them once fixed', async () => {
    const memory = new LastGoodManifests();
    await writeFile(join(dir, 'a.yaml'), `${deployment('a1', 2)}---\n${deployment('a2', 3)}`);
    await writeFile(join(dir, 'b.yaml'), deployment('b1', 1));
    expect(memory.observe(await load())).toEqual({ extraBlocked: [], held: [] });

    // a.yaml becomes unparseable YAML: the loader cannot name what it declares.
    await writeFile(join(dir, 'a.yaml'), `${deployment('a1', 5)}  bad: [unclosed\n`);
    const loaded = await load();
    expect(loaded.resources.map((r) => r.name)).toEqual(['b1']);
    const result = memory.observe(loaded);
    expect(result.held.map((h) => h.key).sort()).toEqual(['Deployment/a1', 'Deployment/a2']);
    // Whatever the loader could not name itself gets a blocked entry, so every held resource is planned as blocked.
    const blockedNames = [...loaded.blocked.map((b) => b.name), ...result.extraBlocked.map((b) => b.name)];
    expect(blockedNames.sort()).toEqual(['a1', 'a2']);
    expect(result.extraBlocked.length).toBeGreaterThan(0);
    expect(result.extraBlocked[0]!.reason).toMatch(/^a\.yaml:\d+:\d+: .*last good version/);
    const a1 = result.held.find((h) => h.name === 'a1')!;
    expect(a1.lastGood.kind === 'Deployment' && a1.lastGood.spec.source_config?.resource_spec?.max_scale).toBe(2);

    // Still broken on the next load: still held, still at the first good version.
    const again = memory.observe(await load());
    expect(again.held.map((h) => h.key).sort()).toEqual(['Deployment/a1', 'Deployment/a2']);

    // Fixed (and a2 removed on purpose): nothing held; a2 is forgotten.
    await writeFile(join(dir, 'a.yaml'), deployment('a1', 6));
    expect(memory.observe(await load())).toEqual({ extraBlocked: [], held: [] });
    expect(memory.get('Deployment/a2')).toBeUndefined();
    const fixed = memory.get('Deployment/a1');
    expect(fixed?.kind === 'Deployment' && fixed.spec.source_config?.resource_spec?.max_scale).toBe(6);
  });

  it('holds a resource the loader names as blocked (schema error) without adding a second blocked entry', async () => {
    const memory = new LastGoodManifests();
    await writeFile(join(dir, 'a.yaml'), deployment('a1', 2));
    memory.observe(await load());
    await writeFile(
      join(dir, 'a.yaml'),
      deployment('a1', 2).replace('  source: internal_docker', '  source: internal_docker\n  typo_field: 1'),
    );
    const loaded = await load();
    expect(loaded.blocked.map((b) => b.name)).toEqual(['a1']);
    const result = memory.observe(loaded);
    expect(result.extraBlocked).toEqual([]);
    expect(result.held.map((h) => h.key)).toEqual(['Deployment/a1']);
  });

  it('does not hold what was deleted with its file, or moved to a file that loads', async () => {
    const memory = new LastGoodManifests();
    await writeFile(join(dir, 'a.yaml'), deployment('a1', 2));
    await writeFile(join(dir, 'b.yaml'), deployment('b1', 2));
    memory.observe(await load());
    await unlink(join(dir, 'b.yaml'));
    expect(memory.observe(await load()).held).toEqual([]);
    expect(memory.get('Deployment/b1')).toBeUndefined();

    // a1 moves to c.yaml while a.yaml is left broken: a1 is valid elsewhere, so a.yaml holds nothing.
    await writeFile(join(dir, 'c.yaml'), deployment('a1', 3));
    await writeFile(join(dir, 'a.yaml'), 'kind: [\n');
    expect(memory.observe(await load()).held).toEqual([]);
  });

  it('holds nothing for a new file that never loaded', async () => {
    const memory = new LastGoodManifests();
    await writeFile(join(dir, 'a.yaml'), 'kind: [\n');
    expect(memory.observe(await load())).toEqual({ extraBlocked: [], held: [] });
  });
});
