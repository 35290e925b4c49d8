// Worker child processes on one Redis: kill -9 mid-job (stalled-job recovery), two workers sharing, SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Job, Queue } from 'bullmq';
import type { DeploymentResource } from '../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { runApply } from '../../src/apply/apply.js';
import { buildJobData, QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { decidedWrite } from '../helpers/job-fixtures.js';
import { openJobs, type Jobs } from '../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import type { WorkerProcessSettings } from '../../src/jobs/runner/worker-process.js';
import { landedWrites, seedWith, writes } from '../helpers/apply.js';
import { buildForChildren, ROOT } from '../helpers/build.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const CHILD = join(ROOT, 'test', 'helpers', 'worker-child.mjs');
const SECRET = 'planted-child-secret-3f9e';

function deployment(name: string): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: `${name}.yaml`, line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: 2 } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
      secrets: [{ name: 'TOKEN', from: { env: 'CHILD_TOKEN' } }],
    },
  };
}

/** Enqueues one job; its id. */
async function enqueue(jobs: Jobs, data: ReturnType<typeof buildJobData>): Promise<string> {
  const [enqueued] = await jobs.enqueuer.enqueue([data]);
  return enqueued!.jobId;
}

interface Child {
  process: ChildProcess;
  stderr: string;
  exited: Promise<number | null>;
}

describe('worker processes', () => {
  let build: { dir: string; remove(): Promise<void> };
  const children: Child[] = [];
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    build = await buildForChildren();
  }, 240_000);
  afterEach(async () => {
    for (const child of children) {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
      await child.exited;
    }
    children.splice(0);
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  afterAll(async () => {
    await build?.remove();
  });

  async function context(emulatorOptions: Parameters<typeof startEmulator>[0]) {
    const emulator: RunningEmulator = await startEmulator({ seed: seedWith([]), buildMs: 0, ...emulatorOptions });
    const prefix = testPrefix('proc');
    const settings: WorkerProcessSettings = {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      apiUrl: emulator.url,
      requestTimeout: 10_000,
      shutdownTimeout: 10_000,
      concurrency: 3,
      attempts: 5,
      backoff: 50,
      globalRate: 0,
    };
    const jobs = await openJobs(settings, { target: { apiUrl: emulator.url } });
    // the same queue seen from outside: which worker ran a job, and its state
    const redis = await connectProducer(settings);
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
    cleanups.push(
      () => emulator.close(),
      () => jobs.close(),
      () => queue.close(),
      () => closeRedis(redis),
      () => dropPrefix(prefix),
    );
    return { emulator, settings, jobs, queue };
  }

  async function spawnWorker(
    name: string,
    settings: WorkerProcessSettings,
    timing = { lockDuration: 1_500, stalledInterval: 500 },
  ): Promise<Child> {
    const proc = spawn(process.execPath, [CHILD], {
      env: {
        ...process.env,
        CHILD_TOKEN: SECRET,
        QUEUE_CHILD_CONFIG: JSON.stringify({ buildDir: build.dir, settings, name, ...timing }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child: Child = {
      process: proc,
      stderr: '',
      exited: new Promise((resolve) => proc.on('exit', (code) => resolve(code))),
    };
    proc.stderr.on('data', (c: Buffer) => (child.stderr += c.toString()));
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('ready')) resolve();
      });
      proc.on('exit', (code) => reject(new Error(`worker ${name} exited ${code}: ${child.stderr}`)));
    });
    return child;
  }

  /** Every child's log so far: it shows the jobs they ran, and never the secret value they wrote. */
  function expectCleanLogs(): void {
    const logs = children.map((c) => c.stderr).join('');
    expect(logs).toContain('"msg":"job done"');
    expect(logs).not.toContain(SECRET);
  }

  async function finished(queue: Queue, jobId: string, timeoutMs = 30_000): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const state = await queue.getJobState(jobId);
      if (state === 'completed' || state === 'failed') return (await Job.fromId(queue, jobId))!;
      await sleep(100);
    }
    throw new Error(`job ${jobId} did not finish in ${timeoutMs} ms`);
  }

  it('a worker killed with SIGKILL mid-job has its job finished by another, and the write lands once', async () => {
    let sawRead!: () => void;
    const jobRead = new Promise<void>((resolve) => (sawRead = resolve));
    const { emulator, settings, jobs, queue } = await context({
      latencyMs: 1_000,
      onRequest: (entry) => {
        if (entry.method === 'GET' && entry.query.name_contains === 'victim') sawRead();
      },
    });
    const a = await spawnWorker('A', settings);
    const data = buildJobData(deployment('victim'), 'create-deployment', {
      origin: 'test',
      write: decidedWrite(deployment('victim'), undefined, { CHILD_TOKEN: 'x' }),
    });
    const jobId = await enqueue(jobs, data);
    await jobRead;
    const active = await queue.getActive();
    expect(active.map((j) => [j.id, j.processedBy])).toEqual([[jobId, 'A']]);
    // The read's answer is on its way to A; A sends its POST at once, and the emulator holds every answer 1 s: 600 ms on,
    // A has sent its POST (even on a loaded machine) and cannot have its answer yet: kill it now
    await sleep(600);
    a.process.kill('SIGKILL');
    expect(await a.exited).toBeNull();
    await spawnWorker('B', settings);

    const job = await finished(queue, jobId);
    expect(job.finishedOn).toBeDefined();
    expect(job.failedReason).toBeUndefined();
    expect(job.processedBy).toBe('B');
    // B found A's write in live state (A died before the answer arrived) instead of creating again
    expect(job.returnvalue).toEqual(
      expect.objectContaining({
        outcome: 'created',
        new_revision: true,
        message: expect.stringContaining('the answer to an earlier attempt was lost'),
      }),
    );
    const creates = landedWrites(emulator.requestLog).filter((e) => e.route === '/v2/deployments');
    expect(creates).toHaveLength(1);
    expect(writes(emulator.requestLog).filter((e) => e.route === '/v2/deployments')).toHaveLength(1);
    expectCleanLogs();
  }, 60_000);

  it('two worker processes share the jobs and no resource is written twice; a rerun writes nothing', async () => {
    const { emulator, settings, jobs, queue } = await context({ latencyMs: 15 });
    await spawnWorker('A', settings);
    await spawnWorker('B', settings);
    const names = Array.from({ length: 24 }, (_, i) => `shared-${i}`);
    const changes = names.map((name) => ({
      resource: deployment(name),
      change: {
        kind: 'Deployment' as const,
        name,
        action: 'create' as const,
        new_revision: true,
        fields: [],
        reason: null,
      },
      write: decidedWrite(deployment(name), undefined, { CHILD_TOKEN: 'x' }),
    }));
    const results = await runApply({
      jobs,
      client: undefined as never,
      env: {},
      changes,
      startWorkers: false,
      pollMs: 500,
    });
    expect(results.map((r) => r.event.type === 'job-completed' && r.event.result?.outcome)).toEqual(
      names.map(() => 'created'),
    );
    const created = landedWrites(emulator.requestLog)
      .map((e) => (e.body as { name: string }).name)
      .sort();
    expect(created).toEqual([...names].sort());
    const processedBy = await Promise.all(results.map(async (r) => (await Job.fromId(queue, r.jobId))!.processedBy));
    expect(new Set(processedBy)).toEqual(new Set(['A', 'B']));

    emulator.resetLog();
    const rerun = await runApply({
      jobs,
      client: undefined as never,
      env: {},
      changes,
      startWorkers: false,
      pollMs: 500,
    });
    expect(rerun.map((r) => r.event.type === 'job-completed' && r.event.result?.outcome)).toEqual(
      names.map(() => 'unchanged'),
    );
    expect(writes(emulator.requestLog)).toEqual([]);
    expectCleanLogs();
  }, 60_000);

  it('SIGTERM lets the active job finish, then the process exits 0', async () => {
    let sawRead!: () => void;
    const jobRead = new Promise<void>((resolve) => (sawRead = resolve));
    const { jobs, queue, settings } = await context({
      latencyMs: 300,
      onRequest: (entry) => {
        if (entry.method === 'GET' && entry.query.name_contains === 'graceful') sawRead();
      },
    });
    const a = await spawnWorker('A', settings);
    const jobId = await enqueue(
      jobs,
      buildJobData(deployment('graceful'), 'create-deployment', {
        origin: 'test',
        write: decidedWrite(deployment('graceful'), undefined, { CHILD_TOKEN: 'x' }),
      }),
    );
    await jobRead;
    a.process.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    const job = await finished(queue, jobId, 5_000);
    expect(job.processedBy).toBe('A');
    expect(job.returnvalue).toMatchObject({ outcome: 'created' });
    expectCleanLogs();
  }, 30_000);
});
