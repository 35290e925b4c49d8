// One fold of a job's result (issue 40): the same refused (422), conflicting (the flap guard) or "made elsewhere meanwhile" (a create answered 409) job result gives the same sync and health reason in `converge apply --output json` and in the daemon's /status; apply records its writes, refused ones too, and the Conflict its job met, in the history with the manifests' id.
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { lossyProxy } from '../helpers/lossy-proxy.js';
import { rawRedis, REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, runConverge, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

const HOOK = 'hook-token-same-result-7c2d';
/** external_docker without image_uri: a valid manifest the service refuses (422). */
const REFUSED =
  'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: fold-refused\nspec:\n  source: external_docker\n';
const TAKEN = 'fold-taken';

interface Conditions {
  sync: { status: string; reason: string; message?: string };
  health: { status: string; reason: string };
}
interface Row extends Conditions {
  key: string;
  job: { id: string; state: string } | null;
}
interface ApplyDoc {
  resources: Array<Conditions & { key: string }>;
  results: Array<{ key: string; status: string; jobId?: string }>;
  converged: boolean;
}
interface HistoryDoc {
  events: Array<{
    type: string;
    reason: string;
    manifests: { kind: string; id: string } | null;
    job: { id: string } | null;
    by: string;
  }>;
}

/** What the two must agree on: the reasons and statuses of both conditions. */
function reasons(c: Conditions | undefined): unknown {
  return c && { sync: [c.sync.status, c.sync.reason], health: [c.health.status, c.health.reason] };
}

describe('apply and the daemon fold a job result the same way', () => {
  it('a refused write, a Conflict and a create answered 409: the same sync and health reason in apply --output json and in /status', async (t) => {
    // fold-taken is made elsewhere before converge runs: hidden from the full listings converge plans from, so each
    // decides to create it; the job's first look-up by name misses it too, so its create is sent and answered 409.
    const e = await startEmulator({
      buildMs: 0,
      seed: {
        deployments: [
          {
            name: TAKEN,
            source: 'external_docker',
            source_config: { resource_spec: { max_scale: 1 } },
            source_revision_config: { image_uri: 'docker.io/other/taken:9' },
          },
        ],
      },
    });
    atEnd(t, () => e.close());
    // A look-up by name misses it until the create it leads to has been answered 409 (`conflictsToMeet` of them): the
    // daemon's targeted reconcile (docs/daemon.md) and its job both look it up by name, and either may come first.
    let conflictsToMeet = 1;
    const conflictsMet = (): number => e.requestLog.filter((r) => r.method === 'POST' && r.status === 409).length;
    const proxy = await lossyProxy(e.url, {
      hiddenName: TAKEN,
      hideFromList(_name, path) {
        if (!path.includes('name_contains')) return true;
        if (!path.includes(`name_contains=${TAKEN}`)) return false;
        return conflictsMet() < conflictsToMeet;
      },
    });
    atEnd(t, () => proxy.close());
    const outside = async (name: string, maxScale: number): Promise<void> => {
      const live = e.store.allDeployments().find((d) => d.name === name)!;
      const res = await fetch(`${e.url}/v2/deployments/${live.id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ source_config: { resource_spec: { max_scale: maxScale } } }),
      });
      expect(res.status).toBe(200);
    };
    const maxScale = (name: string): unknown =>
      (
        e.store.allDeployments().find((d) => d.name === name)?.source_config.resource_spec as
          { max_scale?: number } | undefined
      )?.max_scale;
    const flap = ['--flap-limit', '1', '--flap-window', '10m'];

    // converge apply, on a prefix of its own.
    const applyDir = await tempDir('same-result-apply');
    atEnd(t, () => rm(applyDir, { recursive: true, force: true }));
    await writeFiles(applyDir, {
      'refused.yaml': REFUSED,
      'taken.yaml': dockerDeploymentYaml(TAKEN, { maxScale: 2 }),
      'conflict.yaml': dockerDeploymentYaml('fold-conflict-a', { maxScale: 2 }),
    });
    const applyPrefix = prefixOf(t, 'same-result-apply');
    const apply = async (target: string): Promise<ApplyDoc> => {
      const run = await runConverge([
        'apply',
        applyDir,
        '--target',
        target,
        '--output',
        'json',
        '--api-url',
        proxy.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        applyPrefix,
        ...flap,
      ]);
      const doc = JSON.parse(run.stdout) as ApplyDoc;
      expect(run.code, run.stderr).toBe(doc.converged ? 0 : 1);
      return doc;
    };
    const refusedByApply = await apply('fold-refused');
    expect(refusedByApply.converged).toBe(false);
    expect(refusedByApply.results).toMatchObject([{ key: 'Deployment/fold-refused', status: 'failed' }]);
    const takenByApply = await apply(TAKEN);
    expect(takenByApply.converged).toBe(false);
    expect(e.requestLog.filter((r) => r.method === 'POST' && r.status === 409)).toHaveLength(1);
    expect((await apply('fold-conflict-a')).converged).toBe(true);
    await outside('fold-conflict-a', 9);
    expect((await apply('fold-conflict-a')).converged).toBe(true);
    await outside('fold-conflict-a', 9);
    const conflictByApply = await apply('fold-conflict-a');
    expect(conflictByApply.converged).toBe(false);
    expect(maxScale('fold-conflict-a')).toBe(9);
    const byApply = (doc: ApplyDoc, key: string) => doc.resources.find((r) => r.key === key);

    // The daemon, on a prefix of its own: the same results, one resource at a time (a later reconcile decides again:
    // a refused write is held as WriteRefused from then on), each read from /status once its job has ended.
    const dir = await tempDir('same-result-daemon');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'conflict.yaml': dockerDeploymentYaml('fold-conflict-d', { maxScale: 2 }) });
    const daemon = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        proxy.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefixOf(t, 'same-result-daemon'),
        '--resync',
        '24h',
        '--debounce',
        '200ms',
        ...flap,
      ],
      { CONVERGE_WEBHOOK_TOKEN: HOOK },
    );
    const row = async (key: string): Promise<Row | undefined> =>
      ((await daemon.status()).resources as unknown as Row[]).find((r) => r.key === key);
    const reconcile = async (): Promise<void> => {
      const run = await runConverge(['reconcile', '--url', daemon.url], { CONVERGE_WEBHOOK_TOKEN: HOOK });
      expect(run.code, run.stderr).toBe(0);
    };
    const CONFLICT_D = 'Deployment/fold-conflict-d';
    await until(
      'fold-conflict-d created and applied',
      async () => (await row(CONFLICT_D))?.sync.reason === 'Applied' && maxScale('fold-conflict-d') === 2,
      30_000,
      100,
    );
    await outside('fold-conflict-d', 9);
    await reconcile();
    await until(
      'the change outside put back once',
      async () => maxScale('fold-conflict-d') === 2 && (await row(CONFLICT_D))?.sync.reason === 'Applied',
      30_000,
      100,
    );
    await outside('fold-conflict-d', 9);
    await reconcile();
    const conflicted = await until(
      'the job that met the Conflict',
      async () => {
        const r = await row(CONFLICT_D);
        return r?.job?.state === 'completed' && r.sync.reason === 'Conflict' ? r : undefined;
      },
      30_000,
      100,
    );
    expect(maxScale('fold-conflict-d')).toBe(9);

    await writeFiles(dir, { 'refused.yaml': REFUSED });
    const refused = await until(
      'the job the service refused',
      async () => {
        const r = await row('Deployment/fold-refused');
        return r?.job?.state === 'failed' ? r : undefined;
      },
      30_000,
      100,
    );

    conflictsToMeet = 2;
    await writeFiles(dir, { 'taken.yaml': dockerDeploymentYaml(TAKEN, { maxScale: 2 }) });
    const taken = await until(
      'the job whose create was answered 409',
      async () => {
        const r = await row(`Deployment/${TAKEN}`);
        return r?.job?.state === 'completed' && r.sync.reason === 'OutOfSync' ? r : undefined;
      },
      30_000,
      50,
    );
    expect(e.requestLog.filter((r) => r.method === 'POST' && r.status === 409)).toHaveLength(2);

    // The same reasons, and the ones each result means.
    expect(reasons(byApply(refusedByApply, 'Deployment/fold-refused'))).toEqual(reasons(refused));
    expect(refused.sync.reason).toBe('JobFailed');
    expect(reasons(byApply(takenByApply, `Deployment/${TAKEN}`))).toEqual(reasons(taken));
    // (The daemon decides again a second later, and its next job finds the deployment at once: the row read may be of either.)
    expect(taken.sync.reason).toBe('OutOfSync');
    expect(byApply(takenByApply, `Deployment/${TAKEN}`)!.sync.message).toContain('answered 409');
    expect(reasons(byApply(conflictByApply, 'Deployment/fold-conflict-a'))).toEqual(reasons(conflicted));
    expect(conflicted.sync.reason).toBe('Conflict');
    expect(conflicted.health.reason).toBe('RevisionDeployed');

    // apply (no daemon) recorded its writes, the refused one too, with the manifests' id its applied record carries.
    const history = async (name: string): Promise<HistoryDoc> => {
      const run = await runConverge([
        'history',
        name,
        '--output',
        'json',
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        applyPrefix,
      ]);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as HistoryDoc;
    };
    const told = await history('fold-conflict-a');
    // What its fold found after the job: the Conflict, recorded by apply too.
    expect(told.events.find((ev) => ev.type === 'conflict')).toMatchObject({
      reason: 'changed_outside',
      by: expect.stringMatching(/^apply@/),
    });
    const written = told.events.filter((ev) => ev.type === 'write_done');
    expect(written.map((ev) => ev.reason)).toEqual(['unchanged', 'updated', 'created']);
    const appliedId = await appliedManifests(applyPrefix, 'Deployment/fold-conflict-a');
    for (const ev of written)
      expect(ev).toMatchObject({ manifests: { kind: 'content', id: appliedId }, by: expect.stringMatching(/^apply@/) });
    const failed = (await history('fold-refused')).events.find((ev) => ev.type === 'write_failed');
    expect(failed).toMatchObject({
      reason: 'JobFailed',
      manifests: { kind: 'content', id: appliedId },
      job: { id: refusedByApply.results[0]!.jobId },
    });
  }, 150_000);
});

/** The manifests' id converge's applied state records for the last write to `key` (the hash `PREFIX:applied`). */
async function appliedManifests(prefix: string, key: string): Promise<string> {
  const redis = rawRedis();
  try {
    const record = JSON.parse((await redis.hget(`${prefix}:applied`, key))!) as { manifestVersion: { id: string } };
    return record.manifestVersion.id;
  } finally {
    redis.disconnect();
  }
}
