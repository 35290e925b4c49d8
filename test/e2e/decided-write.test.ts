// Through the built daemon: a job whose live read no longer fits its decided write sends nothing, says so, and the
// daemon decides again soon (not at the next resync, a day away), writing the fresh decision once (docs/decision.md, "The write step").
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { lossyProxy } from '../helpers/lossy-proxy.js';
import { seedWith, writes } from '../helpers/apply.js';
import { dockerDeploymentYaml, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';
import { REDIS_URL } from '../helpers/redis.js';

const BY_ID = /^\/v2\/deployments\/[0-9a-f-]{36}$/;

describe('the daemon and a decided write that no longer fits', { timeout: 60_000 }, () => {
  it('the job sends nothing when live state changed between the decision and its read; a reconcile soon after writes the new decision once', async (t) => {
    const e = await startEmulator({
      seed: seedWith([
        {
          name: 'dw-api',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 2 } },
          source_revision_config: { image_uri: 'docker.io/acme/dw-api:1' },
        },
      ]),
      buildMs: 0,
    });
    atEnd(t, () => e.close());
    const live = () => e.store.allDeployments().find((d) => d.name === 'dw-api')!;
    let raced = false;
    const proxy = await lossyProxy(e.url, {
      // The job's read by id (the decision read the listing): just before it, someone rolls the image back.
      rateLimit(method, path) {
        if (method === 'GET' && BY_ID.test(path) && !raced) {
          raced = true;
          const d = live();
          expect(
            e.store.patchDeployment(d.tenant_id, d.id, {
              source_revision_config: { image_uri: 'docker.io/acme/dw-api:0' },
            }).ok,
          ).toBe(true);
        }
        return false;
      },
    });
    atEnd(t, () => proxy.close());
    const dir = await tempDir('decided-write');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'api.yaml': dockerDeploymentYaml('dw-api', { maxScale: 4 }) });
    const args = [
      '--api-url',
      proxy.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefixOf(t, 'decided-write'),
      '--resync',
      '24h',
      '--backoff',
      '50ms',
      '--log-level',
      'info',
    ];
    const daemon = await daemonOf(t, dir, args);

    const notSent = await daemon.waitForLine(
      (l) => l.msg === 'job sent nothing: live state changed since its decision; reconciling again',
    );
    expect(notSent.key).toBe('Deployment/dw-api');
    expect(String(notSent.reason)).toContain(
      'source_revision_config.image_uri differs now, which the decided write does not cover',
    );
    await until(
      'the new decision to land',
      () =>
        live().source_config.resource_spec !== undefined &&
        (live().source_config.resource_spec as { max_scale?: number }).max_scale === 4,
      20_000,
      50,
    );
    await until(
      '/status to show it synced',
      async () => (await daemon.status()).resources.every((r) => r.state === 'synced'),
      20_000,
      100,
    );
    // One PATCH in all, the fresh decision's: max_scale and the image put back, by the reconcile the job asked for.
    const patches = writes(e.requestLog);
    expect(patches.map((w) => `${w.method} ${w.status}`)).toEqual(['PATCH 200']);
    expect(patches[0]!.body).toEqual({
      source_config: { resource_spec: { max_scale: 4 } },
      source_revision_config: { image_uri: 'docker.io/acme/dw-api:1' },
    });
    // The first resync of a 24 h schedule comes at a random point of its first 2.4 h (10% jitter): the reconcile that
    // wrote is the retry the job asked for. Should that resync fall in these seconds anyway, it takes the retry's place
    // (a run asked for twice is recorded under its higher trigger): either way one ran after the line, and only one.
    const byTrigger = ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> })
      .byTrigger;
    expect((byTrigger.retry ?? 0) + (byTrigger.resync ?? 0)).toBeGreaterThanOrEqual(1);
    // The startup reconcile enqueued the job, and logs its line once its findings are logged: that line may come after
    // the job's. Every other reconcile logged after the job's line ran for it.
    const after = daemon.lines
      .slice(daemon.lines.indexOf(notSent))
      .filter((l) => l.msg === 'reconciled' && l.trigger !== 'startup');
    expect(after.length).toBeGreaterThanOrEqual(1);
    expect(['retry', 'resync']).toContain(after[0]!.trigger);
  });
});
