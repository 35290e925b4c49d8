// The reconcile loop without the binary: cycle.ts, act.ts and reconciler.ts over real manifest files and the emulator on loopback, with fakes of the daemon's ports (enqueuer, applied state, memory, holds, conflicts).
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DriftPolicy } from '../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { ServiceClient } from '../../src/service/client.js';
import { LastGoodManifests } from '../../src/daemon/cycle/last-good.js';
import { reconcileDirectory } from '../../src/daemon/cycle/cycle.js';
import type { CycleContext, EnqueuedJob } from '../../src/daemon/cycle/cycle-context.js';
import { Reconciler } from '../../src/daemon/reconcile/reconciler.js';
import { createMetrics } from '../../src/daemon/telemetry/metrics.js';
import { jobRecord } from '../../src/core/resource-record.js';
import { EventLogStore } from '../../src/store/event-log.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { leaseKey } from '../../src/leader/lease.js';
import type { ResourceEvent } from '../../src/core/resource-state-model.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { statusDocument } from '../../src/daemon/server/daemon-status.js';
import { startStatusServer } from '../../src/daemon/server/status-server.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { manifestDir, seedWith } from '../helpers/apply.js';
import { externalDockerSpec, deploymentYaml } from '../helpers/manifests.js';
import { FakeEnqueuer, fakePorts } from '../helpers/daemon-ports.js';

const SEED = seedWith([
  // steady: live as its manifest says; web: live at max_scale 1, its manifest asks for 3.
  {
    name: 'steady',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/steady:2' },
  },
  {
    name: 'web',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/web:1' },
  },
]);

/** The fingerprint of a desired state no manifest asks for any more. */
const OLDER = 'e'.repeat(64);

const FILES = {
  'steady.yaml': deploymentYaml('steady', externalDockerSpec('docker.io/acme/steady:2', 1)),
  'web.yaml': deploymentYaml('web', externalDockerSpec('docker.io/acme/web:1', 3)),
  'fresh.yaml': deploymentYaml('fresh', externalDockerSpec('docker.io/acme/fresh:1', 2)),
};

describe('the reconcile loop with fakes of its ports', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  let tree: { dir: string; remove(): Promise<void> };
  let enqueuer: FakeEnqueuer;
  let stores: ReturnType<typeof fakePorts>;
  let jobs: EnqueuedJob[];

  beforeAll(async () => {
    emulator = await startEmulator({ seed: SEED, buildMs: 50 });
    client = new ServiceClient({ baseUrl: emulator.url });
    tree = await manifestDir(FILES);
  });
  afterAll(async () => {
    await tree.remove();
    await emulator.close();
  });
  beforeEach(() => {
    enqueuer = new FakeEnqueuer();
    stores = fakePorts();
    jobs = [];
    // web's manifest changed since it was last in sync (max_scale 1 -> 3): the memory holds an older desired state, so
    // its difference is the manifest's, written. (With no memory, policy report reads a difference as drift.)
    stores.remembered.set('Deployment/web', OLDER);
  });

  function context(driftPolicy: DriftPolicy = 'report'): CycleContext {
    return {
      dir: tree.dir,
      env: {},
      client,
      enqueuer,
      ...stores.ports,
      lastGood: new LastGoodManifests(),
      settings: { allowLocalDiscovery: false, driftPolicy },
      onEnqueued: (job) => jobs.push(job),
    };
  }

  describe('cycle.ts and act.ts: one inner reconcile', () => {
    it('enqueues the decided writes (a create, a patch of what differs) and remembers what is in sync', async () => {
      const outcome = await reconcileDirectory(context());
      expect(outcome.files).toBe(3);
      expect(outcome.enqueued).toBe(2);
      expect(enqueuer.added.map((d) => [d.key, d.operation]).sort()).toEqual([
        ['Deployment/fresh', 'create-deployment'],
        ['Deployment/web', 'patch-deployment'],
      ]);
      const web = enqueuer.added.find((d) => d.key === 'Deployment/web')!;
      expect(web.origin).toBe('daemon');
      expect(web.deploymentId).toBe(outcome.live.find((d) => d.name === 'web')!.id);
      // Each job is handed to the daemon as it is enqueued, with the fingerprint of the desired state it carries.
      expect(jobs.map((j) => j.key).sort()).toEqual(['Deployment/fresh', 'Deployment/web']);
      expect(jobs.every((j) => j.desired === outcome.fingerprints?.get(j.key))).toBe(true);
      // The written ones are Applying; the one in sync is remembered (the baseline drift is told against).
      expect(outcome.outcomes.get('Deployment/web')?.sync.reason).toBe('Applying');
      expect(outcome.outcomes.get('Deployment/steady')?.write).toBeNull();
      expect(stores.remembered.get('Deployment/steady')).toBe(outcome.fingerprints?.get('Deployment/steady'));
      // A written one's new desired state is remembered once its job completes, not when it is enqueued.
      expect(stores.remembered.get('Deployment/web')).toBe(OLDER);
      expect(stores.remembered.has('Deployment/fresh')).toBe(false);
      expect(outcome.drift).toEqual([]);
    });

    it('act.ts: a job already waiting with this desired state gets no second one; one finished meanwhile is decided Applied', async () => {
      enqueuer.answer.set('Deployment/web', 'in-flight');
      enqueuer.answer.set('Deployment/fresh', 'finished');
      const outcome = await reconcileDirectory(context());
      expect(outcome.enqueued).toBe(0);
      expect(enqueuer.added).toEqual([]);
      const web = outcome.outcomes.get('Deployment/web')!;
      expect(web.sync.reason).toBe('Applying');
      expect(jobs).toEqual([
        expect.objectContaining({ key: 'Deployment/web', jobId: 'Deployment/web@earlier', inFlight: true }),
      ]);
      expect(outcome.outcomes.get('Deployment/fresh')!.sync.reason).toBe('Applied');
      expect(outcome.outcomes.get('Deployment/fresh')!.write).toBeNull();
    });

    it('drift: live left its unchanged manifest; reported (no write) or healed (a write), with who changed it', async () => {
      // A first reconcile remembers steady in sync; then someone scales it behind converge's back.
      await reconcileDirectory(context());
      const steady = (await client.listDeployments()).find((d) => d.name === 'steady')!;
      await client.patchDeployment(steady.id, { source_config: { resource_spec: { max_scale: 5 } } });
      try {
        enqueuer.added.length = 0;
        const reported = await reconcileDirectory(context('report'));
        expect(reported.drift).toEqual([
          expect.objectContaining({
            key: 'Deployment/steady',
            policy: 'report',
            reason: expect.stringMatching(/^changed outside converge/) as unknown,
          }),
        ]);
        expect(reported.drift[0]!.fields.some((f) => f.includes('max_scale'))).toBe(true);
        expect(enqueuer.added.map((d) => d.key)).not.toContain('Deployment/steady');

        const healed = await reconcileDirectory(context('heal'));
        expect(healed.drift.map((d) => [d.key, d.policy])).toEqual([['Deployment/steady', 'heal']]);
        expect(enqueuer.added.map((d) => d.key)).toContain('Deployment/steady');
      } finally {
        await client.patchDeployment(steady.id, { source_config: { resource_spec: { max_scale: 1 } } });
      }
    });

    it('a hold on the current desired state stops its write; a hold on an older one is released', async () => {
      const first = await reconcileDirectory(context());
      const desired = first.fingerprints!.get('Deployment/web')!;
      const since = new Date().toISOString();
      stores.holds.set('Deployment/web', {
        reason: 'RevisionFailed',
        desired,
        message: 'revision r1 failed',
        since,
        revisionId: 'r1',
      });
      stores.holds.set('Deployment/fresh', {
        reason: 'RevisionFailed',
        desired: 'f'.repeat(64),
        message: 'an older desired state failed',
        since,
      });
      enqueuer.added.length = 0;
      const held = await reconcileDirectory(context());
      expect(held.outcomes.get('Deployment/web')!.write).toBeNull();
      expect(held.outcomes.get('Deployment/web')!.skip?.code).toBe('RevisionFailed');
      expect(enqueuer.added.map((d) => d.key)).toEqual(['Deployment/fresh']);
      expect([...stores.holds.keys()]).toEqual(['Deployment/web']);
    });
  });

  describe('reconciler.ts: the outer loop', () => {
    it('runs a requested reconcile, keeps its rows, and lays a job result over them', async () => {
      const lines: Array<Record<string, unknown>> = [];
      const log = pino(
        { level: 'info' },
        new Writable({
          write: (chunk, _e, done) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), done()),
        }),
      );
      const { onEnqueued: _own, ...ctx } = context();
      const reconciler = new Reconciler({
        context: ctx,
        metrics: createMetrics({ processMetrics: false }),
        log,
        maxRetryMs: 60_000,
      });
      try {
        const record = await reconciler.request('watch');
        expect(record?.error ?? null).toBeNull();
        const rows = new Map(reconciler.tracker.resources().map((r) => [r.key, r]));
        expect([...rows.keys()].sort()).toEqual(['Deployment/fresh', 'Deployment/steady', 'Deployment/web']);
        expect(rows.get('Deployment/steady')!.sync.status).toBe('synced');
        expect(rows.get('Deployment/web')!.job?.state).toBe('queued');

        const job = enqueuer.added.find((d) => d.key === 'Deployment/web')!;
        const jobId = reconciler.tracker.resources().find((r) => r.key === 'Deployment/web')!.job!.id;
        await reconciler.jobCompleted(jobId, {
          outcome: 'updated',
          new_revision: true,
          deploymentId: job.deploymentId,
          message: 'patched',
        });
        const web = reconciler.tracker.resources().find((r) => r.key === 'Deployment/web')!;
        expect(web.job?.state).toBe('completed');
        expect(web.job?.outcome).toBe('updated');
        expect(reconciler.snapshot().reconciles.total).toBe(1);
      } finally {
        await reconciler.stop();
      }
    });

    it('follows one job result through: emitted, in the log, folded into the projection in Redis, served by /status', async () => {
      const prefix = testPrefix('loop-record');
      const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
      const store = new EventLogStore(redis, prefix);
      const { onEnqueued: _own, ...ctx } = context();
      const metrics = createMetrics({ processMetrics: false });
      const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
      const reconciler = new Reconciler({
        context: ctx,
        metrics,
        log: pino({ level: 'silent' }),
        maxRetryMs: 60_000,
        record: { store, folds, by: 'replica-loop' },
      });
      const parts = {
        dir: tree.dir,
        startedAt: new Date().toISOString(),
        stopping: false,
        serviceUrl: emulator.url,
        embedded: false,
        reconcileEndpoint: false,
        settings: { driftPolicy: 'report' as const, resync: 60_000, debounce: 100 },
        lease: null,
        appliedState: { lost: false, lostAt: null, losses: 0, detail: null },
        reconciler,
        cycles: [],
      };
      const server = await startStatusServer({
        host: '127.0.0.1',
        port: 0,
        handlers: {
          readiness: () => Promise.resolve([]),
          status: () => statusDocument(parts),
          metrics: async () => (await reconciler.countResources(), metrics.render()),
          history: (key, limit) => store.history(key, { limit }),
        },
      });
      const status = async (): Promise<{
        resources: Array<{
          key: string;
          job: { id: string; state: string; outcome?: string } | null;
          health: { status: string; revisionId?: string };
          reason: string | null;
        }>;
      }> => (await fetch(`${server.url}/status`)).json() as never;
      try {
        await reconciler.request('watch');
        await reconciler.recorded();
        const jobId = reconciler.tracker.resources().find((r) => r.key === 'Deployment/web')!.job!.id;
        expect((await status()).resources.find((r) => r.key === 'Deployment/web')?.job).toMatchObject({
          id: jobId,
          state: 'queued',
        });

        // The worker that ran the job folds its result where it ran (src/jobs/runner/processor.ts), then its BullMQ event reaches the leader.
        const job = enqueuer.added.find((d) => d.key === 'Deployment/web')!;
        const answer = {
          outcome: 'updated' as const,
          new_revision: true,
          latestRevisionId: 'rev-loop',
          deploymentId: job.deploymentId,
        };
        const meta = { at: new Date().toISOString(), by: 'worker@loop' };
        const result: ResourceEvent = {
          type: 'job-completed',
          jobId,
          at: meta.at,
          result: answer,
          operation: job.operation,
        };
        await new ResourceFolds(redis, prefix, leaseKey(prefix)).fold([
          {
            key: 'Deployment/web',
            events: [result],
            entries: [jobRecord({ key: 'Deployment/web', jobId, meta, answer })],
            meta,
          },
        ]);
        await reconciler.jobCompleted(jobId, answer);

        // The fold's state is the projection in Redis, and /status serves it.
        await reconciler.recorded();
        expect((await store.statesOf(['Deployment/web'])).get('Deployment/web')).toMatchObject({
          job: { id: jobId, state: 'completed', outcome: 'updated' },
          health: { status: 'progressing', revisionId: 'rev-loop' },
        });
        expect((await status()).resources.find((r) => r.key === 'Deployment/web')).toMatchObject({
          job: { id: jobId, state: 'completed', outcome: 'updated' },
          health: { status: 'progressing', revisionId: 'rev-loop' },
        });
        // The log holds the whole walk: the decision, the job enqueued, the worker's result, the revision it started.
        const walk = (await (await fetch(`${server.url}/history/Deployment/web`)).json()) as {
          events: Array<{ type: string; by: string; job: { id: string } | null }>;
        };
        expect(walk.events.map((e) => `${e.type} ${e.by}`).reverse()).toEqual([
          'decided replica-loop',
          'write_enqueued replica-loop',
          'write_done worker@loop',
          'revision worker@loop',
        ]);
        expect(walk.events.every((e) => e.job?.id === jobId)).toBe(true);
        // /status and the gauges read the projection, not the leader's memory: a state written to Redis is what they show.
        const web = (await store.statesOf(['Deployment/web'])).get('Deployment/web')!;
        await new ResourceFolds(redis, prefix, leaseKey(prefix)).fold([
          {
            key: web.key,
            events: [
              {
                type: 'revision',
                health: {
                  status: 'healthy',
                  reason: 'RevisionDeployed',
                  message: 'read from the projection',
                  revisionId: 'rev-loop',
                },
              },
            ],
            meta,
          },
        ]);
        expect((await status()).resources.find((r) => r.key === 'Deployment/web')?.health.status).toBe('healthy');
        const gauge = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text()).find(
          (m) => m.name === 'converge_resource_health' && m.labels.name === 'web' && m.value === 1,
        );
        expect(gauge?.labels.health).toBe('healthy');
      } finally {
        await server.close();
        await reconciler.stop();
        await closeRedis(redis);
        await dropPrefix(prefix);
      }
    });

    it('logs what a reconcile found once its decisions are folded in Redis, so the lines never hold the rows off /status', async () => {
      const prefix = testPrefix('loop-order');
      const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
      const store = new EventLogStore(redis, prefix);
      const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
      // Each line notes how many folds had been written to Redis when it was logged.
      let foldsWritten = 0;
      const fold = folds.fold.bind(folds);
      folds.fold = async (...args) => {
        const outcomes = await fold(...args);
        foldsWritten += outcomes.length;
        return outcomes;
      };
      const lines: Array<{ msg: string; level: number; health?: string; folds: number }> = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push({ ...(JSON.parse(chunk.toString()) as { msg: string; level: number }), folds: foldsWritten });
          done();
        },
      });
      // the tree's three files and one with a problem of its own
      const broken = await manifestDir({ ...FILES, 'broken.yaml': deploymentYaml('broken', 'source: nope') });
      const { onEnqueued: _own, ...ctx } = context();
      const reconciler = new Reconciler({
        context: { ...ctx, dir: broken.dir },
        metrics: createMetrics({ processMetrics: false }),
        log: pino({ level: 'info' }, sink),
        maxRetryMs: 60_000,
        record: { store, folds, by: 'replica-order' },
      });
      try {
        await reconciler.request('watch');
        const found = lines.filter((l) => l.msg === 'manifest problem' || l.msg === 'reconciled');
        expect(found.map((l) => l.msg)).toContain('manifest problem');
        expect(found.at(-1)?.msg).toBe('reconciled');
        // every decision of the three files was folded before the first of those lines
        for (const line of found) expect(line.folds).toBeGreaterThanOrEqual(3);
        // a resource first seen healthy is not a transition worth a line at info (one first seen degraded is)
        expect(lines.filter((l) => l.msg === 'health changed: healthy' && l.level === 30)).toEqual([]);
      } finally {
        await reconciler.stop();
        await broken.remove();
        await closeRedis(redis);
        await dropPrefix(prefix);
      }
    });

    it('a reconcile that cannot list the service fails as a record of the run and enqueues nothing', async () => {
      // Port 9 (discard) refuses on loopback; one attempt per GET, so the failure is told at once.
      const down = new ServiceClient({
        baseUrl: 'http://127.0.0.1:9',
        headersTimeoutMs: 1_000,
        retry: { attempts: 1 },
      });
      const log = pino({ level: 'silent' });
      const { onEnqueued: _own, ...ctx } = { ...context(), client: down };
      const reconciler = new Reconciler({
        context: ctx,
        metrics: createMetrics({ processMetrics: false }),
        log,
        retryMs: 60_000,
        maxRetryMs: 60_000,
      });
      try {
        const record = await reconciler.request('watch');
        expect(record?.error).toEqual(expect.any(String));
        expect(enqueuer.added).toEqual([]);
        expect(reconciler.snapshot().reconciles.failed).toBe(1);
      } finally {
        await reconciler.stop();
      }
    });
  });
});
