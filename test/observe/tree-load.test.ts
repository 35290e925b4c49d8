// The tree's load started ahead of the service side (src/observe/tree-load.ts): `compiling` settles once the compile has
// begun or the load has ended (a missing directory included), the load is what loadManifestDir gives, each compiled
// resource is prepared ahead, and a load aborted before its compile rejects with the signal's reason.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { startTreeLoad } from '../../src/observe/tree-load.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';

let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tree-load-'));
  for (let i = 0; i < 30; i++)
    await writeFile(
      join(dir, `app-${i}.yaml`),
      deploymentYaml(`app-${i}`, externalDockerSpec(`docker.io/acme/app-${i}:1`, 2)),
    );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('startTreeLoad', () => {
  it('settles `compiling` before the load ends, loads what loadManifestDir loads, and hashes each resource ahead', async () => {
    const order: string[] = [];
    const tree = startTreeLoad({ dir, env: {}, allowLiteralSecrets: false });
    const compiling = tree.compiling.then(() => order.push('compiling'));
    const loaded = await tree.loaded;
    order.push('loaded');
    await compiling;
    expect(order).toEqual(['compiling', 'loaded']);
    const whole = await loadManifestDir(dir, { allowLiteralSecrets: false });
    expect(JSON.stringify({ ...loaded, contentId: '' })).toBe(JSON.stringify({ ...whole, contentId: '' }));
    expect(loaded.contentId).toBe(whole.contentId);
    expect(loaded.resources).toHaveLength(30);
    for (const resource of loaded.resources) expect(tree.planAhead.hashed(resource)).toBeDefined();
  });

  it('a directory that does not exist: `compiling` settles, and the load rejects as loadManifestDir does', async () => {
    const missing = join(dir, 'missing');
    const tree = startTreeLoad({ dir: missing, env: {}, allowLiteralSecrets: false });
    await tree.compiling;
    await expect(tree.loaded).rejects.toThrow(`manifest directory ${missing} does not exist`);
  });

  it("aborted before its compile begins, it compiles nothing and rejects with the signal's reason", async () => {
    const stop = new AbortController();
    const tree = startTreeLoad({ dir, env: {}, allowLiteralSecrets: false }, stop.signal);
    stop.abort(new Error('the command left'));
    await expect(tree.loaded).rejects.toThrow('the command left');
    await tree.compiling;
  });
});
