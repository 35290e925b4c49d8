// Ctrl-C and locks (issue 14, item 5), through the built binary and real signals: an interrupted apply stops in order
// and leaves nothing locked or queued; an apply that finds the jobs of a killed run says what it waits for, with a
// countdown; and no job of the older run writes its older desired state after the newer apply enqueued its own.
import { rm } from 'node:fs/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { atEnd } from './scoped.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  spawnConverge,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const NAMES = ['int-a', 'int-b', 'int-c', 'int-d'];

function manifests(maxScale: number): Record<string, string> {
  return Object.fromEntries(NAMES.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale })]));
}

/**
 * What of the queue is left, through BullMQ's public counts: jobs running (each holds a lock, until its worker ends it
 * or, for a killed worker, until the lock expires and the stalled check hands it on) and jobs queued.
 */
async function leftovers(redis: Redis, prefix: string): Promise<{ active: number; queued: number }> {
  const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
  try {
    const counts = await queue.getJobCounts('active', 'waiting', 'prioritized', 'delayed', 'paused');
    return {
      active: counts.active ?? 0,
      queued: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0) + (counts.paused ?? 0),
    };
  } finally {
    await queue.close();
  }
}

// The tests run concurrently (they mostly wait: on the 700 ms answers, the grace, a lock's expiry), each with its
// own emulator, directory and Redis prefix; the longest (a lock's expiry, about 30 s) comes first.
describe.concurrent('Ctrl-C and locks', () => {
  let redis: Redis;
  const prefixes: string[] = [];

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
  }, 60_000);

  afterAll(async () => {
    await killAllConverge();
    for (const p of prefixes) await dropPrefix(p);
    redis?.disconnect();
  });

  /** An emulator of the test `t` whose every request takes 700 ms: an apply of four deployments is surely mid-flight when the signal comes. */
  async function slowEmulator(t: TestContext): Promise<RunningEmulator> {
    const emulator = await startEmulator({ buildMs: 0, latencyMs: 700 });
    atEnd(t, () => emulator.close());
    return emulator;
  }

  it('after a killed apply: the next one says what it waits for, with a countdown, and no older desired state is written after its own', async (t) => {
    const emulator = await slowEmulator(t);
    const dir = await tempDir('killed');
    const prefix = testPrefix('killed');
    prefixes.push(prefix);
    const args = [
      'apply',
      dir,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--concurrency',
      '4',
    ];
    const scaleOf = (body: unknown): number | undefined =>
      (body as { source_config?: { resource_spec?: { max_scale?: number } } } | undefined)?.source_config?.resource_spec
        ?.max_scale;
    try {
      await writeFiles(dir, manifests(1));
      const created = await runConverge(args, {}, 60_000);
      expect(created.code, created.stdout + created.stderr).toBe(0);

      // An apply to max_scale 2, killed while its jobs have read the deployments and not yet sent a PATCH.
      await writeFiles(dir, manifests(2));
      const before = emulator.requestLog.length;
      const killed = spawnConverge(args);
      await until(
        "the killed apply's jobs reading their deployments",
        () =>
          emulator.requestLog
            .slice(before)
            .some(
              (e) =>
                e.method === 'GET' &&
                (e.route === '/v2/deployments/{deployment_id}' || e.query.deployment_ids !== undefined),
            ),
        20_000,
        5,
      );
      await killed.kill('SIGKILL');
      expect((await leftovers(redis, prefix)).active).toBeGreaterThan(0);

      // A newer apply, to max_scale 3.
      await writeFiles(dir, manifests(3));
      const from = emulator.requestLog.length;
      const began = Date.now();
      const newer = await runConverge(args, {}, 120_000);
      expect(newer.code, newer.stdout + newer.stderr).toBe(0);
      expect(newer.stderr).toMatch(
        /Deployment\/int-[a-d] waits for job \S+ of an earlier run \(interrupted, or running in another process\): its lock expires within \d+s, then it runs again with the newest desired state/,
      );
      // Every write sent after the newer apply began carries its desired state, never the killed run's older one.
      // Sent: by arrival (`at`), since the log is in the order of answers and a PATCH the killed run sent in the
      // moment before its SIGKILL is answered 700 ms later, after the newer apply began.
      const writes = emulator.requestLog.slice(from).filter((e) => e.method === 'PATCH' && e.at >= began);
      expect(writes.length).toBeGreaterThan(0);
      for (const write of writes) expect(scaleOf(write.body), JSON.stringify(write.body)).toBe(3);
      const plan = await runConverge(
        [
          'plan',
          dir,
          '--api-url',
          emulator.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
          '--detailed-exitcode',
        ],
        {},
        60_000,
      );
      expect(plan.code, plan.stdout).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 150_000);

  it.for<NodeJS.Signals>(['SIGINT', 'SIGTERM'])(
    '%s mid-apply: stops enqueueing, finishes or hands back the jobs in flight, says what was and was not done, leaves nothing locked',
    { timeout: 90_000 },
    async (signal, t) => {
      const emulator = await slowEmulator(t);
      const dir = await tempDir('interrupt');
      const prefix = testPrefix('interrupt');
      prefixes.push(prefix);
      const names = NAMES.map((n) => `${n}-${signal.toLowerCase()}`);
      await writeFiles(
        dir,
        Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 1 })])),
      );
      const args = [
        'apply',
        dir,
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--concurrency',
        '2',
      ];
      try {
        const before = emulator.requestLog.length;
        const apply = spawnConverge(args);
        // The plan is printed once listing is done; the first jobs start right after.
        await until('the plan line', () => apply.stdout().includes('Plan:'), 20_000, 20);
        const own = () => emulator.requestLog.slice(before);
        await until(
          'a write in flight',
          () => own().some((e) => e.method === 'POST') || own().filter((e) => e.route === '/v2/deployments').length > 1,
          20_000,
          20,
        );
        apply.child.kill(signal);
        const exit = await apply.exited;
        expect(exit.code).toBe(1);
        expect(apply.stderr()).toContain(`converge apply: ${signal}: stopping: nothing more is enqueued`);
        const out = apply.stdout();
        expect(out).toMatch(
          new RegExp(
            `Apply interrupted \\(${signal}\\): \\d+ done, 0 unchanged, 0 failed, \\d+ not done; not converged\\. No job is left locked or queued\\.`,
          ),
        );
        const done = Number(/(\d+) done/.exec(out.split('\n').find((l) => l.startsWith('Apply interrupted'))!)![1]);
        // One line per way a resource was left undone, with a count (a way that left one resource names it).
        const notDoneLines = out.split('\n').filter((l) => l.startsWith('  interrupted'));
        expect(new Set(notDoneLines.map((l) => l.slice(l.indexOf(': '))))).toHaveProperty('size', notDoneLines.length);
        const notDone = notDoneLines
          .map((l) => (/^ {2}interrupted (\d+) resources: /.exec(l) ? Number(/^ {2}interrupted (\d+)/.exec(l)![1]) : 1))
          .reduce((a, b) => a + b, 0);
        expect(Number(/(\d+) not done/.exec(out)![1])).toBe(notDone);
        expect(done + notDone).toBe(names.length);
        expect(notDone).toBeGreaterThan(0);
        expect(await leftovers(redis, prefix)).toEqual({ active: 0, queued: 0 });

        // The next apply neither waits for a lock nor sits silent: it finishes what is left, promptly.
        const again = await runConverge(args, {}, 60_000);
        expect(again.code, again.stdout + again.stderr).toBe(0);
        expect(again.stdout).toContain('Apply complete');
        // Promptly: nothing of the interrupted run holds it back (it would say it waits behind an earlier run's jobs).
        expect(again.stderr).not.toContain('of an earlier run');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    'SIGINT once every job is in flight, all of them finishing in the grace: the closing line says not converged, and the exit code agrees (1)',
    { timeout: 90_000 },
    async (t) => {
      const emulator = await slowEmulator(t);
      const dir = await tempDir('all-done');
      const prefix = testPrefix('all-done');
      prefixes.push(prefix);
      const names = ['int-all-a', 'int-all-b', 'int-all-c'];
      const args = [
        'apply',
        dir,
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--concurrency',
        '4',
      ];
      try {
        await writeFiles(
          dir,
          Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 1 })])),
        );
        const created = await runConverge(args, {}, 60_000);
        expect(created.code, created.stdout + created.stderr).toBe(0);
        await writeFiles(
          dir,
          Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 2 })])),
        );
        const apply = spawnConverge(args);
        await until('the plan line', () => apply.stdout().includes('Plan:'), 20_000, 20);
        const from = emulator.requestLog.length;
        // Each job reads its deployment by id, then sends its PATCH (700 ms): once each deployment's read is answered, every job is in flight.
        const readIds = () =>
          new Set(
            emulator.requestLog
              .slice(from)
              .filter(
                (e) =>
                  e.method === 'GET' &&
                  (e.route === '/v2/deployments/{deployment_id}' || e.query.deployment_ids !== undefined),
              )
              .map((e) => String(e.query.deployment_ids ?? e.path)),
          );
        await until('every job reading its deployment', () => readIds().size >= names.length, 20_000, 5);
        apply.child.kill('SIGINT');
        const exit = await apply.exited;
        const out = apply.stdout();
        expect(out, out).toContain(
          `Apply interrupted (SIGINT): ${names.length} done, 0 unchanged, 0 failed, 0 not done; not converged.`,
        );
        expect(exit.code, out + apply.stderr()).toBe(1);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('SIGINT while a write outlasts the grace: the job is handed back and withdrawn, its lock released at once', async () => {
    const slow = await startEmulator({ buildMs: 0, latencyMs: 9_000 });
    const dir = await tempDir('handback');
    const prefix = testPrefix('handback');
    prefixes.push(prefix);
    try {
      await writeFiles(dir, { 'slow.yaml': dockerDeploymentYaml('int-slow', { maxScale: 1 }) });
      const apply = spawnConverge([
        'apply',
        dir,
        '--api-url',
        slow.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
      ]);
      await until(
        'the job reading its deployment',
        () => slow.requestLog.filter((e) => e.route === '/v2/deployments').length >= 2,
        40_000,
        20,
      );
      expect((await leftovers(redis, prefix)).active).toBe(1);
      apply.child.kill('SIGINT');
      const exit = await apply.exited;
      expect(exit.code).toBe(1);
      // 5 s of grace, then handed back: before the write could finish (the emulator records a request once answered,
      // and its 9 s latency had not answered the create when the apply was gone).
      expect(slow.requestLog.filter((e) => e.method === 'POST')).toEqual([]);
      expect(apply.stdout()).toContain(
        '  interrupted Deployment/int-slow: interrupted while running: handed back and withdrawn',
      );
      expect(await leftovers(redis, prefix)).toEqual({ active: 0, queued: 0 });
    } finally {
      await slow.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
