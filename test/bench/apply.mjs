// Figure 3: apply of N changed deployments through BullMQ with 20 jobs in flight, against a bare client sending the
// same read-then-PATCH pairs with 20 in flight in the same run; BullMQ's own overhead.
import { Queue, Worker } from 'bullmq';
import { ServiceClient } from '../../dist/service/client.js';
import { findLiveDeployment } from '../../dist/service/find-deployment.js';
import { plan } from '../../dist/plan/plan.js';
import { decideOutcomes } from '../../dist/plan/outcomes.js';
import { runApply } from '../../dist/apply/apply.js';
import { jobResults } from '../../dist/apply/apply-state.js';
import { changesToApply } from '../../dist/apply/apply-jobs.js';
import { Enqueuer } from '../../dist/jobs/queue/enqueuer.js';
import { buildJobData, operationFor, QUEUE_NAME } from '../../dist/jobs/queue/jobs.js';
import { deleteKeys, openJobs } from '../../dist/jobs/open-jobs.js';
import { closeRedis, connectProducer, connectWorker } from '../../dist/store/redis.js';
import { gatherPlanInput } from '../../dist/observe/gather.js';
import { loadManifestDir } from '../../dist/observe/manifests.js';
import { benchMain, benchPrefix, figure, ms, REDIS_URL, removeDir, tempDir } from './lib/common.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, writeManifests } from './lib/fixtures.mjs';
import { installRedisCounter, readRedisCounter, resetRedisCounter, serverCommandCalls } from './lib/redis-count.mjs';

const CONCURRENCY = 20;

function workerSettings(prefix) {
  return {
    redisUrl: REDIS_URL,
    redisPrefix: prefix,
    concurrency: CONCURRENCY,
    globalRate: 0,
    attempts: 3,
    backoff: 1000,
  };
}

/** The real thing: plan N changed deployments, enqueue one job each, run the in-process workers, wait for all. */
export async function realApply(n, latencyMs, env) {
  const dir = await tempDir('apply');
  const prefix = benchPrefix('apply');
  const emulator = await startEmulatorChild({ n, latencyMs });
  const client = new ServiceClient({ baseUrl: emulator.url });
  const jobs = await openJobs(workerSettings(prefix));
  // Outside the jobs' own connections: the server's command counts, and the clean-up.
  const admin = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  try {
    await writeManifests(dir, n, n);
    const gathered = await gatherPlanInput({
      dir,
      env,
      client,
      allowLiteralSecrets: false,
      allowLocalDiscovery: false,
    });
    const result = plan(gathered.input);
    // As `converge apply` does: the decision about each resource says which become jobs (its revision reads, health only, are not measured here).
    const { outcomes } = decideOutcomes(result, {
      mode: 'apply',
      resources: gathered.resources,
      live: gathered.live.deployments,
      revisions: new Map(),
      secretHashes: gathered.input.secretHashes,
      now: Date.now(),
    });
    const changes = changesToApply(outcomes, result.changes, gathered.resources, gathered.live.deployments);
    if (changes.length !== n) throw new Error(`expected ${n} changes, the plan has ${JSON.stringify(result.summary)}`);

    await emulator.reset();
    const cpuBefore = (await emulator.stats(0)).cpu;
    const selfBefore = process.cpuUsage();
    const arrivals = [];
    const unsubscribe = await emulator.onRequest((r) => arrivals.push(r));
    const serverBefore = await serverCommandCalls(admin);
    resetRedisCounter();
    const started = Date.now();
    const ends = await runApply({ jobs, client, env, changes });
    const ended = Date.now();
    // Each job's raw result folded as `converge apply` folds it (outside the timed part).
    const results = jobResults(outcomes, ends);
    const selfCpu = process.cpuUsage(selfBefore);
    const redis = readRedisCounter();
    const serverCalls = (await serverCommandCalls(admin)) - serverBefore;
    const stats = await emulator.stats();
    await unsubscribe();

    const failed = results.filter((r) => r.status !== 'done');
    if (failed.length)
      throw new Error(`${failed.length} jobs did not finish done: ${failed[0].message ?? failed[0].status}`);
    const patches = arrivals.filter((r) => r.method === 'PATCH');
    if (stats.patch !== n || patches.length !== n)
      throw new Error(`expected ${n} PATCHes, the emulator saw ${stats.patch}`);
    const first = Math.min(...arrivals.map((r) => r.at));
    const lastAnswered = Math.max(...patches.map((r) => r.at)) + latencyMs;
    return {
      n,
      wallMs: ended - started,
      startupMs: first - started,
      processingMs: lastAnswered - first,
      tailMs: ended - lastAnswered,
      requests: stats.total,
      gets: stats.list,
      patchCount: stats.patch,
      redis,
      serverCalls,
      emulatorCpuMs: (stats.cpu.user + stats.cpu.system - cpuBefore.user - cpuBefore.system) / 1000,
      convergeCpuMs: (selfCpu.user + selfCpu.system) / 1000,
    };
  } finally {
    await jobs.close();
    await deleteKeys(admin, prefix);
    await closeRedis(admin);
    await client.close();
    await emulator.stop();
    await removeDir(dir);
  }
}

/**
 * BullMQ alone: the same job payloads and options (the Enqueuer, one job at a time), then a worker of the same concurrency whose
 * processor does nothing. Enqueue and processing are timed apart: what BullMQ costs per job in Redis round trips,
 * CPU of this process, and time a job holds one of the slots.
 */
export async function bullmqOverhead(n) {
  const dir = await tempDir('bullmq');
  const prefix = benchPrefix('bullmq');
  const settings = workerSettings(prefix);
  const producer = await connectProducer(settings);
  const workerConnection = await connectWorker(settings);
  const queue = new Queue(QUEUE_NAME, { connection: producer, prefix });
  const enqueuer = new Enqueuer(queue, settings, { redis: producer, prefix });
  let worker;
  try {
    await writeManifests(dir, 1, 0);
    const loaded = await loadManifestDir(dir, { allowLiteralSecrets: false });
    const template = loaded.resources[0];
    const datas = [];
    for (let i = 0; i < n; i++) {
      const resource = { ...template, name: `overhead-${String(i).padStart(5, '0')}` };
      datas.push(buildJobData(resource, operationFor(resource, 'update'), { origin: 'bench', manifestDir: dir }));
    }
    resetRedisCounter();
    let cpu = process.cpuUsage();
    let started = performance.now();
    for (const data of datas) await enqueuer.enqueue([data]);
    const enqueueMs = performance.now() - started;
    const enqueueCpu = process.cpuUsage(cpu);
    const enqueueRedis = readRedisCounter();

    let completed = 0;
    let allDone;
    const done = new Promise((resolve) => (allDone = resolve));
    resetRedisCounter();
    cpu = process.cpuUsage();
    started = performance.now();
    worker = new Worker(QUEUE_NAME, async () => ({ outcome: 'unchanged', new_revision: false }), {
      connection: workerConnection,
      prefix,
      concurrency: CONCURRENCY,
    });
    worker.on('completed', () => {
      completed++;
      if (completed === n) allDone();
    });
    await done;
    const processMs = performance.now() - started;
    const processCpu = process.cpuUsage(cpu);
    const processRedis = readRedisCounter();
    return {
      n,
      enqueueMs,
      enqueueCpuMs: (enqueueCpu.user + enqueueCpu.system) / 1000,
      enqueueRedis,
      processMs,
      processCpuMs: (processCpu.user + processCpu.system) / 1000,
      processRedis,
    };
  } finally {
    await worker?.close();
    await deleteKeys(producer, prefix);
    await queue.close();
    await closeRedis(producer, workerConnection);
    await removeDir(dir);
  }
}

/**
 * The floor on this machine: for each deployment, the same read by id a job makes right before its write
 * (findLiveDeployment, the code the job runs), then one PATCH; 20 pairs in flight, straight from a client (no
 * queue, no Redis).
 */
export async function readThenPatchFloor(n, latencyMs) {
  const emulator = await startEmulatorChild({ n, latencyMs });
  const client = new ServiceClient({ baseUrl: emulator.url });
  try {
    const live = await client.listDeployments();
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < live.length) {
          const listed = live[next++];
          const found = await findLiveDeployment(client, listed.name, listed.id);
          if (!found) throw new Error(`${listed.name} was not found by id`);
          await client.patchDeployment(found.id, { source_config: { build_on_push: false } });
        }
      }),
    );
    return { wallMs: performance.now() - started };
  } finally {
    await client.close();
    await emulator.stop();
  }
}

export async function run(options) {
  installRedisCounter();
  const latencyMs = options.latencyMs;
  const n = options.quick ? (options.applyN ?? 60) : 1000;
  const env = benchEnv();
  const real = await realApply(n, latencyMs, env);
  const overhead = await bullmqOverhead(n);
  const floor = await readThenPatchFloor(n, latencyMs);
  const target = floor.wallMs * 1.25;

  const ideal = (n / CONCURRENCY) * latencyMs;
  const perJob = (x) => x / n;
  const nonBlocking = (r) => r.roundTrips - r.blocking;
  const slotMs = (overhead.processMs * CONCURRENCY) / n;
  const tables = [
    {
      title: `Apply (figure 3): ${n} changed deployments, ${CONCURRENCY} jobs in flight, latency ${latencyMs} ms, emulator in a child process`,
      columns: [
        'run',
        'wall ms',
        'start-up ms',
        'jobs ms',
        'tail ms',
        'ideal ms',
        'jobs/ideal',
        'requests',
        'GET/job',
        'PATCH/job',
        'converge CPU ms',
        'emulator CPU ms',
      ],
      rows: [
        [
          'converge apply (runApply)',
          ms(real.wallMs),
          ms(real.startupMs),
          ms(real.processingMs),
          ms(real.tailMs),
          ideal,
          real.processingMs / ideal,
          real.requests,
          perJob(real.gets),
          perJob(real.patchCount),
          ms(real.convergeCpuMs),
          ms(real.emulatorCpuMs),
        ],
        [
          'bare client: read by id, then PATCH, 20 in flight',
          ms(floor.wallMs),
          '-',
          ms(floor.wallMs),
          '-',
          ideal,
          floor.wallMs / ideal,
          2 * n,
          1,
          1,
          '-',
          '-',
        ],
      ],
    },
    {
      title: 'Redis per job during that apply (this process; a pipeline or MULTI is one round trip)',
      columns: [
        'round trips/job',
        'commands/job',
        'BullMQ cmds/job',
        'applied-state cmds/job',
        'blocking waits',
        'server-side cmds/job',
      ],
      rows: [
        [
          perJob(nonBlocking(real.redis)),
          perJob(real.redis.commands),
          perJob(real.redis.byOwner.bullmq),
          perJob(real.redis.byOwner.appliedState),
          real.redis.blocking,
          perJob(real.serverCalls),
        ],
      ],
    },
    {
      title: `BullMQ alone: ${n} jobs (same payloads and options), enqueued one by one, then ${CONCURRENCY} in flight with a processor that does nothing`,
      columns: ['phase', 'wall ms', 'ms/job', 'slot ms/job', 'CPU ms/job', 'round trips/job', 'commands/job'],
      rows: [
        [
          'enqueue',
          ms(overhead.enqueueMs),
          overhead.enqueueMs / n,
          '-',
          overhead.enqueueCpuMs / n,
          perJob(nonBlocking(overhead.enqueueRedis)),
          perJob(overhead.enqueueRedis.commands),
        ],
        [
          'process',
          ms(overhead.processMs),
          overhead.processMs / n,
          slotMs,
          overhead.processCpuMs / n,
          perJob(nonBlocking(overhead.processRedis)),
          perJob(overhead.processRedis.commands),
        ],
      ],
    },
  ];
  const top = Object.entries(real.redis.byName)
    .slice(0, 8)
    .map(([k, v]) => `${k} ${ms(v / n)}`)
    .join(', ');
  const figures = [
    figure(
      '3',
      `apply N=${n}: job phase (first request to last PATCH answered) against the bare client's read-then-PATCH pairs in the same run`,
      ms(real.processingMs),
      'ms',
      `<= ${ms(target)} (1.25 x ${ms(floor.wallMs)})`,
      real.processingMs <= target,
      `${ms(real.processingMs / floor.wallMs)} x the bare client`,
    ),
    figure('3', `apply N=${n}: wall time`, ms(real.wallMs), 'ms', 'reported', null),
    figure(
      '3',
      `apply N=${n}: fixed start-up cost (runApply to the first request)`,
      ms(real.startupMs),
      'ms',
      'reported',
      null,
    ),
    figure(
      '3',
      `apply N=${n}: the bare client's read-then-PATCH pairs, 20 in flight (this machine's floor)`,
      ms(floor.wallMs),
      'ms',
      'reported',
      null,
      `${ms(floor.wallMs / ideal)} x ideal`,
    ),
    figure(
      '3',
      `apply N=${n}: service requests per job`,
      ms(real.requests / n),
      'req',
      'reported (1 read by id and 1 PATCH each)',
      null,
    ),
    figure(
      '3',
      `apply N=${n}: Redis round trips per job (BullMQ and applied state)`,
      ms(perJob(nonBlocking(real.redis))),
      'RT',
      'reported',
      null,
    ),
    figure(
      '3',
      'BullMQ overhead per job: time a job holds a slot (no-op processor, 20 in flight)',
      ms(slotMs),
      'ms',
      'reported',
      null,
    ),
    figure(
      '3',
      'BullMQ overhead per job: Redis round trips (enqueue + process)',
      ms(perJob(nonBlocking(overhead.enqueueRedis)) + perJob(nonBlocking(overhead.processRedis))),
      'RT',
      'reported',
      null,
    ),
    figure(
      '3',
      'BullMQ overhead per job: CPU of this process (enqueue + process)',
      ms((overhead.enqueueCpuMs + overhead.processCpuMs) / n),
      'ms',
      'reported',
      null,
    ),
  ];
  return {
    name: 'apply',
    tables,
    figures,
    real,
    overhead,
    notes: [
      `converge used ${ms(real.convergeCpuMs / n)} ms of CPU per job (HTTP, BullMQ, applied state, plan of the job): with ${CONCURRENCY} jobs in flight, ${ms((real.convergeCpuMs / n) * CONCURRENCY)} ms of CPU per round of ${CONCURRENCY} jobs against ${latencyMs} ms of latency; the emulator used ${ms(real.emulatorCpuMs / n)} ms per PATCH in its own process.`,
      `jobs ms: from the first request of any job to the last PATCH answered (its arrival + ${latencyMs} ms); ideal = N/${CONCURRENCY} x latency (one round trip per job; a job now makes two, its read and its write); start-up: runApply called to the first request (events connection, worker start, first enqueues); tail: last answer to runApply returning (completion events).`,
      `Redis commands per job by name: ${top}.`,
      "server-side cmds/job: the INFO commandstats delta of the Redis server over the apply, per job: it counts the commands BullMQ's Lua scripts run inside Redis, and those of any other client of that Redis at the time.",
      'slot ms/job: processing wall x concurrency / N with a processor that does nothing: what BullMQ adds to each job while it holds one of the 20 slots.',
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
