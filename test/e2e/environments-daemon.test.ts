// The daemon of one environment (`converge run DIR --vars FILE --overlay DIR`): an edit of the variables file or of the
// overlay is seen by its watcher (chokidar, real files) and re-planned: the change reaches the service as a PATCH.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import {
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  REDIS_URL,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';
import { atEnd, daemonOf } from './scoped.js';

afterAll(async () => {
  await killAllConverge();
});

/** Block style: a `{ }` flow mapping would end at the `}` of ${MAX_SCALE}. */
const MANIFEST = [
  'apiVersion: converge/v1',
  'kind: Deployment',
  'metadata:',
  '  name: env-app-${ENV}',
  'spec:',
  '  source: external_docker',
  '  source_config:',
  '    resource_spec:',
  '      max_scale: ${MAX_SCALE}',
  '  source_revision_config:',
  '    image_uri: docker.io/acme/env-app:1',
  '',
].join('\n');

const overlay = (minScale: number): string =>
  [
    'kind: Deployment',
    'metadata:',
    '  name: env-app-${ENV}',
    'spec:',
    '  source_config:',
    '    resource_spec:',
    `      min_scale: ${minScale}`,
    '',
  ].join('\n');

describe('environments: the daemon re-plans when a variables file or an overlay changes', () => {
  it('vars edit -> PATCH of max_scale; overlay edit -> PATCH of min_scale', { timeout: 120_000 }, async (t) => {
    const e = await startEmulator({ buildMs: 0, lenientCreate: true });
    atEnd(t, () => e.close());
    const root = await tempDir('env-daemon');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const base = join(root, 'base');
    await mkdir(base);
    await mkdir(join(root, 'overlays', 'dev'), { recursive: true });
    await writeFiles(base, { 'app.yaml': MANIFEST });
    await writeFile(join(root, 'dev.yaml'), 'ENV: dev\nMAX_SCALE: 2\n');
    await writeFile(join(root, 'overlays', 'dev', 'app.yaml'), overlay(1));
    const prefix = testPrefix('env-daemon');
    atEnd(t, () => dropPrefix(prefix));
    const args = [
      '--vars',
      join(root, 'dev.yaml'),
      '--overlay',
      join(root, 'overlays', 'dev'),
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
    ];
    // A resync an hour away: every reconcile after the first comes from the watcher.
    await daemonOf(t, base, [...args, '--debounce', '100ms', '--resync', '1h']);
    const live = () => e.store.allDeployments().find((d) => d.name === 'env-app-dev');
    await until('env-app-dev created with max_scale 2', () => liveMaxScale(live()) === 2, 30_000, 50);

    await writeFile(join(root, 'dev.yaml'), 'ENV: dev\nMAX_SCALE: 5\n');
    await until('the variables edit applied (max_scale 5)', () => liveMaxScale(live()) === 5, 30_000, 50);

    await writeFile(join(root, 'overlays', 'dev', 'app.yaml'), overlay(3));
    await until(
      'the overlay edit applied (min_scale 3)',
      () => (live()?.source_config.resource_spec as { min_scale?: number } | undefined)?.min_scale === 3,
      30_000,
      50,
    );
    expect(liveMaxScale(live())).toBe(5);
  });
});
