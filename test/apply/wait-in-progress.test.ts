// apply --wait with nothing to write still waits for a rollout already in progress (an earlier apply's), and writes nothing for it.
// The emulator's builds run on a clock the test moves: a build ends when the test says so, never after some wall time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import type { RequestLogEntry } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

/** The emulator's build time; nothing waits for it: the test moves the emulator's clock past it. */
const BUILD_MS = 60_000;
const REVISION_ROUTE = '/v2/deployments/{deployment_id}/revisions/{revision_id}';

interface ApplyJson {
  results: Array<Record<string, unknown>>;
  resources: Array<{ key: string; health: { status: string; reason: string; revisionId?: string } }>;
  converged: boolean;
}

describe('converge apply --wait: a rollout already in progress', () => {
  let emulator: RunningEmulator;
  let now = Date.now();
  /** When set: the emulator's clock passes the build at the Nth read of a revision from now on (the plan reads it once first). */
  let finishAt: { reads: number } | undefined;
  const onRequest = (entry: RequestLogEntry): void => {
    if (!finishAt || entry.method !== 'GET' || entry.route !== REVISION_ROUTE) return;
    finishAt.reads -= 1;
    if (finishAt.reads > 0) return;
    finishAt = undefined;
    now += BUILD_MS + 1;
  };
  /** The manifest directory of each deployment (its latest), and every directory made, to remove. */
  const dirs = new Map<string, string>();
  const made: Array<{ remove(): Promise<void> }> = [];
  const prefix = testPrefix('wait-earlier');

  beforeAll(async () => {
    emulator = await startEmulator({
      seed: seedWith([
        {
          name: 'web',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/web:1' },
        },
        {
          name: 'doomed',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/doomed:1' },
        },
      ]),
      buildMs: BUILD_MS,
      buildFail: /^doomed$/,
      clock: () => now,
      onRequest,
    });
  });
  afterAll(async () => {
    await emulator.close();
    for (const dir of made) await dir.remove();
    await dropPrefix(prefix);
  });

  const argv = (name: string, ...extra: string[]): string[] => [
    dirs.get(name)!,
    '--api-url',
    emulator.url,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--backoff',
    '50ms',
    '--health-poll',
    '100ms',
    ...extra,
  ];

  /** Writes NAME's manifest with max_scale SCALE and applies it without --wait: a new revision starts and is left building. */
  async function startBuild(name: string, scale: number): Promise<{ deploymentId: string; revisionId: string }> {
    const dir = await manifestDir({
      'app.yaml': deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale)),
    });
    made.push(dir);
    dirs.set(name, dir.dir);
    const started = await runApplyCli(argv(name), {});
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(new RegExp(`done +Deployment/${name}: (adopted|updated); a new revision started`));
    const live = emulator.store.allDeployments().find((d) => d.name === name)!;
    expect(live.latest_revision_id).not.toBe(live.active_revision_id);
    return { deploymentId: live.id, revisionId: live.latest_revision_id! };
  }

  const revisionReads = (): number =>
    emulator.requestLog.filter((e) => e.method === 'GET' && e.route === REVISION_ROUTE).length;

  it('without --wait, nothing to write: returns while the revision builds, its health progressing', async () => {
    const { revisionId } = await startBuild('web', 2);
    emulator.resetLog();
    const run = await runApplyCli(argv('web', '--output', 'json'), {});
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as ApplyJson;
    expect(doc.results).toEqual([]);
    expect(doc.resources).toEqual([
      expect.objectContaining({
        key: 'Deployment/web',
        health: expect.objectContaining({ status: 'progressing', reason: 'RevisionBuilding', revisionId }),
      }),
    ]);
    expect(doc.converged).toBe(true);
    expect(run.stderr).not.toContain('waiting for');
    // The plan read the revision once for its health; nothing followed it.
    expect(revisionReads()).toBe(1);
    expect(writes(emulator.requestLog)).toEqual([]);
    const live = emulator.store.allDeployments().find((d) => d.name === 'web')!;
    expect(live.latest_revision_id).toBe(revisionId);
    expect(live.active_revision_id).not.toBe(revisionId);
  });

  it('with --wait, nothing to write: waits for the revision an earlier apply started, sends no write, exits 0 once it is active', async () => {
    const { revisionId } = await startBuild('web', 4);
    emulator.resetLog();
    // The plan reads the revision (building); the wait's first poll reads it again, and only then does the build end.
    finishAt = { reads: 2 };
    const run = await runApplyCli(argv('web', '--wait', '--wait-timeout', '20s'), {});
    expect(run.stdout).toContain(
      `  waiting for revision ${revisionId} of Deployment/web, already building (not started by this apply)\n`,
    );
    expect(run.stdout).toMatch(
      new RegExp(
        `active +Deployment/web: revision ${revisionId} \\(already building, not started by this apply\\) is active`,
      ),
    );
    expect(run.stdout).toContain('Apply complete: 0 done, 0 unchanged, 0 failed. Live state matches the manifests.');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/converge apply: waiting for 1 revision: 0 active, 1 building/);
    expect(finishAt).toBeUndefined();
    expect(revisionReads()).toBeGreaterThanOrEqual(3);
    expect(writes(emulator.requestLog)).toEqual([]);
    expect(emulator.store.allDeployments().find((d) => d.name === 'web')!.active_revision_id).toBe(revisionId);
  });

  it('with --wait and --output json: the rollout is marked startedBy "earlier" and reported healthy', async () => {
    const { deploymentId, revisionId } = await startBuild('web', 5);
    emulator.resetLog();
    finishAt = { reads: 2 };
    const run = await runApplyCli(argv('web', '--wait', '--wait-timeout', '20s', '--output', 'json'), {});
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      `converge apply: waiting for revision ${revisionId} of Deployment/web, already building (not started by this apply)\n`,
    );
    const doc = JSON.parse(run.stdout) as ApplyJson;
    expect(doc.results).toEqual([
      {
        kind: 'Deployment',
        name: 'web',
        key: 'Deployment/web',
        status: 'unchanged',
        new_revision: false,
        deploymentId,
        latestRevisionId: revisionId,
        startedBy: 'earlier',
        revision: 'active',
        health: expect.objectContaining({
          status: 'healthy',
          reason: 'RevisionDeployed',
          revisionId,
          revisionStatus: 'DEPLOYED',
        }),
      },
    ]);
    expect(doc.resources).toEqual([
      expect.objectContaining({
        key: 'Deployment/web',
        health: expect.objectContaining({ status: 'healthy', revisionId }),
      }),
    ]);
    expect(doc.converged).toBe(true);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('with --wait, nothing to write, and a build that does not end: the timeout, exit 1', async () => {
    const { revisionId } = await startBuild('web', 6);
    emulator.resetLog();
    // Nothing moves the emulator's clock: the build never ends, whatever the wait's own clock does.
    const run = await runApplyCli(argv('web', '--wait', '--wait-timeout', '1s'), {});
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      new RegExp(
        `timeout +Deployment/web: revision ${revisionId} \\(already building, not started by this apply\\) not active after 1s`,
      ),
    );
    expect(run.stdout).toContain('not converged (revisions not active in time)');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('with --wait, nothing to write, and the build fails: exits 1 naming the revision and BUILD_FAILED', async () => {
    const { deploymentId, revisionId } = await startBuild('doomed', 2);
    emulator.resetLog();
    finishAt = { reads: 2 };
    const run = await runApplyCli(argv('doomed', '--wait', '--wait-timeout', '20s'), {});
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `  waiting for revision ${revisionId} of Deployment/doomed, already building (not started by this apply)\n`,
    );
    expect(run.stdout).toContain(
      `failed    Deployment/doomed (deployment ${deploymentId}): revision ${revisionId} ended BUILD_FAILED`,
    );
    expect(run.stdout).toContain(`not converged (revision failed: Deployment/doomed ${revisionId} BUILD_FAILED)`);
    expect(finishAt).toBeUndefined();
    // Nothing written: the one request that is not a GET reads the failed build's log (its endpoint takes a POST).
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.route}`)).toEqual([
      'POST /v1/projects/{project_id}/revisions/{revision_id}/build_logs',
    ]);
  });

  it('a re-run after the build failed (nothing to write, nothing to wait for): the failed line names the deployment too', async () => {
    const { deploymentId, revisionId } = await startBuild('doomed', 3);
    now += BUILD_MS + 1;
    emulator.resetLog();
    const run = await runApplyCli(argv('doomed'), {});
    expect(run.code, run.stdout).toBe(1);
    expect(run.stdout).toContain(
      `  failed    Deployment/doomed (deployment ${deploymentId}): revision ${revisionId} ended BUILD_FAILED`,
    );
    expect(writes(emulator.requestLog).filter((e) => e.method !== 'POST' || !e.route.endsWith('/build_logs'))).toEqual(
      [],
    );
  });
});
