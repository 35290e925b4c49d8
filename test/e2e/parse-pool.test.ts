// parse-pool: manifest files parsed on worker threads (from the build) give exactly what the main thread gives.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseManifestBytes } from '../../src/core/manifest/parse.js';
import { parseAll, parseThreads, threadsWorthIt, type ParseTask } from '../../src/observe/parse-pool.js';
import { ensureBuilt, ROOT } from './helpers.js';

function text(i: number): string {
  const lines = ['apiVersion: converge/v1', 'kind: Deployment', 'metadata:', `  name: app-${i}`, 'spec:', '  source: external_docker'];
  if (i % 7 === 0) lines.push('  surprise: 1');
  if (i % 11 === 0) lines.push('  secrets:', '    - name: KEY', '      value: literal');
  lines.push('  source_revision_config:', `    image_uri: docker.io/acme/app:${i}`, '');
  return lines.join('\n');
}

const tasks: ParseTask[] = Array.from({ length: 450 }, (_, i) => ({ path: `team/app-${i}.yaml`, bytes: Buffer.from(i === 5 ? 'a: [unclosed' : text(i)) }));
const options = { allowLiteralSecrets: false };

describe('parseAll', () => {
  it('on the main thread alone: the results of parseManifestBytes, in order', async () => {
    const results = await parseAll(tasks, options, 0);
    expect(results).toEqual(tasks.map((t) => parseManifestBytes(t.path, t.bytes, options)));
  });

  it('from the TypeScript sources there is no worker script, so no thread is started', () => {
    expect(parseThreads()).toBe(0);
  });

  it('starts threads only when the work left outweighs starting them', () => {
    // plain manifests the fast reader takes: never; 1,000 files only the yaml package reads: not yet; 10,000: yes
    expect(threadsWorthIt(0, 100_000)).toBe(false);
    expect(threadsWorthIt(1, 900)).toBe(false);
    expect(threadsWorthIt(1, 9_900)).toBe(true);
    expect(threadsWorthIt(0.1, 9_900)).toBe(false);
  });

  it('decides by itself on the main thread (no worker script from the sources) and gives the same results', async () => {
    const results = await parseAll(tasks, options);
    expect(results).toEqual(tasks.map((t) => parseManifestBytes(t.path, t.bytes, options)));
  });

  describe('with worker threads (the build in dist)', () => {
    let built: typeof import('../../src/observe/parse-pool.js');
    beforeAll(async () => {
      await ensureBuilt();
      built = (await import(pathToFileURL(join(ROOT, 'dist', 'observe', 'parse-pool.js')).href)) as typeof built;
    }, 240_000);

    it('two threads and the main thread give the same results in the same order', async () => {
      // Enough files that the threads are up before the main thread has taken every chunk.
      const many = Array.from({ length: 6 }, (_, k) => tasks.map((t) => ({ path: `${k}/${t.path}`, bytes: t.bytes }))).flat();
      const expected = many.map((t) => parseManifestBytes(t.path, t.bytes, options));
      const counts = { byThreads: 0 };
      const results = await built.parseAll(many, options, 2, counts);
      expect(counts.byThreads).toBeGreaterThan(0);
      expect(results).toEqual(expected);
      expect(results.filter((r) => r.resources.length === 1)).toHaveLength(expected.filter((r) => r.resources.length === 1).length);
      expect(results[5]!.diagnostics[0]!.code).toMatch(/^E_YAML/);
    });

    it('has threads to start on this machine when it has more than one core', async () => {
      const { availableParallelism } = await import('node:os');
      expect(built.parseThreads()).toBe(Math.min(3, availableParallelism() - 1));
    });
  });
});
